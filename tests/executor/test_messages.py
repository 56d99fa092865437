"""The request model / REQUEST.json format: validation, located errors, schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from capplan.executor.errors import RequestFileError
from capplan.executor.messages import AssistantMessage, ChatRequest, ReasoningIn, load_request, parse_request, request_json_schema
from capplan.executor.reasoning import ReasoningBlock, StructuredReasoning

TOOL = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}}


def test_full_request_round_trips() -> None:
    req = ChatRequest.model_validate(
        {
            "system": "be brief",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}]},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": "c1", "function": {"name": "lookup", "arguments": "{}"}}],
                    "reasoning": {"blocks": [{"type": "thinking", "text": "t", "signature": "S"}]},
                },
                {"role": "tool", "tool_call_id": "c1", "content": "ok", "images": [{"media_type": "image/png", "data": "AA=="}]},
            ],
            "tools": [TOOL],
            "tool_choice": {"type": "function", "function": {"name": "lookup"}},
            "reasoning": {"mode": "budget", "budget_tokens": 2000},
            "temperature": 0.2,
            "seed": 7,
            "top_p": 0.9,
            "max_tokens": 100,
        }
    )
    assert req.tool_dicts() == [TOOL]
    assistant = req.messages[1]
    assert isinstance(assistant, AssistantMessage) and assistant.reasoning is not None
    assert assistant.reasoning.to_structured().blocks == (ReasoningBlock(type="thinking", text="t", signature="S"),)


def test_reasoning_round_trips_through_request_form() -> None:
    sr = StructuredReasoning(
        blocks=(
            ReasoningBlock(type="redacted_thinking", encrypted_data="ENC"),
            ReasoningBlock(type="reasoning_text", text="x", extras=(("id", "r1"), ("index", 0))),
        ),
        summary="s",
        signatures=("g1",),
    )
    assert ReasoningIn.from_structured(sr).to_structured() == sr


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"messages": []}, "messages: List should have at least 1 item"),
        ({"messages": [{"role": "system", "content": "x"}]}, "messages.0: Input tag 'system' found"),
        ({"messages": [{"role": "user", "content": "x"}], "tool_choice": "auto"}, "tool_choice is set but the request has no tools"),
        ({"messages": [{"role": "tool", "tool_call_id": "zz", "content": "x"}]}, "no earlier assistant turn made"),
        ({"messages": [{"role": "user", "content": "x"}], "tools": [TOOL, TOOL]}, "duplicate tool names: lookup"),
        ({"messages": [{"role": "assistant"}]}, "needs content, tool_calls or reasoning"),
        ({"messages": [{"role": "user", "content": "x"}], "tools": [TOOL], "tool_choice": {"type": "function", "function": {"name": "nope"}}}, "not among the tools"),
        ({"messages": [{"role": "user", "content": "x"}], "reasoning": {"mode": "adaptive"}}, "needs effort_hint"),
    ],
)
def test_bad_requests_are_refused(body: dict, needle: str) -> None:
    with pytest.raises(RequestFileError) as info:
        parse_request(json.dumps(body), source="r.json")
    assert needle in str(info.value)


def test_errors_are_located_to_line_and_column_and_all_reported() -> None:
    text = '{\n  "messages": [\n    {"role": "user", "content": "hi"},\n    {"role": "assistant", "content": 3, "bogus": 1}\n  ]\n}\n'
    with pytest.raises(RequestFileError) as info:
        parse_request(text, source="r.json")
    assert info.value.problems == (
        "r.json:4:27: error[REQUEST]: messages.1.content: Input should be a valid string",
        "r.json:4:41: error[REQUEST]: messages.1.bogus: Extra inputs are not permitted",
    )


def test_invalid_json_is_located(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text('{"messages": [\n}', encoding="utf-8")
    with pytest.raises(RequestFileError, match=r"r.json:2:1: error\[REQUEST\]: not valid JSON"):
        load_request(path)


def test_missing_file_is_a_request_error(tmp_path: Path) -> None:
    with pytest.raises(RequestFileError, match="cannot read request file"):
        load_request(tmp_path / "absent.json")


def test_json_schema_accepts_what_the_model_accepts() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = request_json_schema()
    assert schema["title"] == "capplan request file"
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate({"messages": [{"role": "user", "content": "x"}], "tools": [TOOL]}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"messages": [{"role": "user", "content": "x"}], "extra": 1}, schema)
