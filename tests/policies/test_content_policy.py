"""Tool-result content policies: text-only notes, image parts, and what litellm makes of them."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from tests.fake_provider import FakeProvider, import_litellm

from capplan.executor.errors import UnsupportedContentError
from capplan.executor.policies.content_policy import AnthropicContent, NovaContent, OpenAIContent, ToolContentPolicy
from capplan.executor.registry import policy_class

PNG = {"media_type": "image/png", "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="}
JPEG = SimpleNamespace(media_type="image/jpeg", data="/9j/4AAQSkZJRg==")


@pytest.mark.parametrize(
    ("name", "cls", "fmt", "images"),
    [
        ("openai", OpenAIContent, "openai", False),
        ("anthropic", AnthropicContent, "anthropic", True),
        ("nova", NovaContent, "openai", False),
    ],
)
def test_registry_and_properties(name: str, cls: type[ToolContentPolicy], fmt: str, images: bool) -> None:
    assert policy_class("content_policy", name) is cls and cls.name == name
    assert cls().format == fmt and cls().supports_images is images


@pytest.mark.parametrize("cls", [OpenAIContent, NovaContent, AnthropicContent])
def test_text_only_results_stay_strings(cls: type[ToolContentPolicy]) -> None:
    assert cls().render_tool_result("42 rows") == "42 rows"
    assert cls().render_tool_result("") == ""


def test_openai_describes_every_image_it_cannot_send() -> None:
    got = OpenAIContent().render_tool_result("saved", [PNG, JPEG])
    assert isinstance(got, str)
    first, second = got.split("\n\n", 1)[1].split("\n")
    assert got.startswith("saved\n\n")
    assert first == (
        "[image 1 of 2 returned by the tool was not sent (image/png, 70 bytes): "
        "tool results under the 'openai' content policy carry text only]"
    )
    assert "image 2 of 2" in second and "image/jpeg" in second


def test_openai_image_only_result_is_just_the_note() -> None:
    got = OpenAIContent().render_tool_result("", [JPEG])
    assert got.startswith("[image 1 of 1") and "\n" not in got


def test_nova_notes_name_the_nova_policy() -> None:
    assert "under the 'nova' content policy" in NovaContent().render_tool_result("x", [PNG])


def test_anthropic_puts_text_then_image_parts() -> None:
    got = AnthropicContent().render_tool_result("screenshot attached", [PNG, JPEG])
    assert got == [
        {"type": "text", "text": "screenshot attached"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG['data']}"}},
        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQSkZJRg=="}},
    ]


def test_anthropic_omits_an_empty_text_part() -> None:
    got = AnthropicContent().render_tool_result("", [PNG])
    assert isinstance(got, list) and [part["type"] for part in got] == ["image_url"]


def test_anthropic_refuses_a_media_type_it_cannot_send() -> None:
    with pytest.raises(UnsupportedContentError, match="image/bmp"):
        AnthropicContent().render_tool_result("x", [{"media_type": "image/bmp", "data": "Qk0="}])


@pytest.mark.parametrize("cls", [OpenAIContent, AnthropicContent])
@pytest.mark.parametrize("image", [{"media_type": "image/png"}, {"media_type": "", "data": "x"}, "raw-bytes", SimpleNamespace(data="x")])
def test_malformed_images_are_refused(cls: type[ToolContentPolicy], image: Any) -> None:
    with pytest.raises(UnsupportedContentError, match="needs a non-empty `media_type`"):
        cls().render_tool_result("x", [image])


def test_anthropic_parts_reach_anthropic_as_image_blocks() -> None:
    """litellm turns the policy's image parts into Anthropic image blocks inside the tool_result."""
    litellm = import_litellm()
    reply = json.loads((Path(__file__).parent / "fixtures" / "reasoning_anthropic_messages_response.json").read_text())
    with FakeProvider(routes={"/v1/messages": reply}) as server:
        messages = [
            {"role": "user", "content": "take a screenshot"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "toolu_01", "type": "function", "function": {"name": "screenshot", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "toolu_01", "content": AnthropicContent().render_tool_result("here", [PNG])},
        ]
        litellm.completion(
            model="anthropic/claude-sonnet-4-5", api_base=server.root, api_key="k", max_tokens=64, messages=messages,
            tools=[{"type": "function", "function": {"name": "screenshot", "parameters": {"type": "object", "properties": {}}}}],
        )
        tool_result = server.requests[-1].body["messages"][-1]["content"][0]
    assert tool_result["type"] == "tool_result"
    assert tool_result["content"] == [
        {"type": "text", "text": "here"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG["data"]}},
    ]
