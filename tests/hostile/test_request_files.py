"""Request files are validated whole before anything is built: located by JSON path, exit 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli_runner import invoke_checked

REPO = Path(__file__).resolve().parents[2]
PLAN = REPO / "golden" / "plans" / "gpt-4o.json"
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]


def call(call_id: str, name: str = "lookup", arguments: Any = "{}") -> dict[str, Any]:
    return {"id": call_id, "function": {"name": name, "arguments": arguments}}


def preview(tmp_path: Path, request: dict[str, Any]) -> tuple[int, list[str]]:
    path = tmp_path / "request.json"
    path.write_text(json.dumps(request, indent=1))
    result = invoke_checked("preview", "--plan", str(PLAN), str(path))
    lines = result.output.splitlines() if result.exit_code else []
    for line in lines:
        file, line_no, col, rest = line.split(":", 3)
        assert file == str(path) and int(line_no) >= 1 and int(col) >= 1 and rest.startswith(" error[REQUEST]: ")
    return result.exit_code, lines


def history(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"tools": TOOLS, "messages": [{"role": "user", "content": "go"}, *messages]}


@pytest.mark.parametrize(
    ("request_", "path", "message"),
    [
        (history({"role": "assistant", "tool_calls": [call("c1")]}),
         "messages.1.tool_calls.0.id", "has no tool result"),
        (history({"role": "assistant", "tool_calls": [call("c1")]}, {"role": "user", "content": "well?"}),
         "messages.1.tool_calls.0.id", "has no tool result"),
        (history({"role": "assistant", "tool_calls": [call("c1")]}, {"role": "tool", "tool_call_id": "c1", "content": "a"},
                 {"role": "tool", "tool_call_id": "c1", "content": "b"}),
         "messages.3.tool_call_id", "answered twice"),
        (history({"role": "assistant", "tool_calls": [call("c1"), call("c1")]},
                 {"role": "tool", "tool_call_id": "c1", "content": "a"}),
         "messages.1.tool_calls.1.id", "used twice"),
        (history({"role": "assistant", "tool_calls": [call("c1", "rm_rf")]}, {"role": "tool", "tool_call_id": "c1", "content": "a"}),
         "messages.1.tool_calls.0.function.name", "do not declare; declared: lookup"),
        (history({"role": "assistant", "tool_calls": [call("c1", arguments="{oops")]},
                 {"role": "tool", "tool_call_id": "c1", "content": "a"}),
         "messages.1.tool_calls.0.function.arguments", "not strict JSON"),
        (history({"role": "assistant", "tool_calls": [call("c1", arguments="[1, 2]")]},
                 {"role": "tool", "tool_call_id": "c1", "content": "a"}),
         "messages.1.tool_calls.0.function.arguments", "a JSON list, not an object"),
        ({**history(), "temperature": 99}, "temperature", "less than or equal to 2"),
        ({**history(), "top_p": 0}, "top_p", "greater than 0"),
        ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "javascript:alert(1)"}}]}]},
         "messages.0.content.0.image_url.url", "not javascript:"),
        ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "file:///etc/passwd"}}]}]},
         "messages.0.content.0.image_url.url", "not file:"),
        ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,@@"}}]}]},
         "messages.0.content.0.image_url.url", "not valid base64"),
        ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:text/html;base64,PGI+"}}]}]},
         "messages.0.content.0.image_url.url", "is not an image"),
        ({"messages": [{"role": "user", "content": [{"type": "audio", "audio": "x"}]}]},
         "messages.0.content.0", "does not match any of the expected tags"),
        (history({"role": "assistant", "tool_calls": [call("c1")]},
                 {"role": "tool", "tool_call_id": "c1", "content": "a", "images": [{"media_type": "image/png", "data": "%%%"}]}),
         "messages.2.images.0.data", "not valid base64"),
    ],
)
def test_bad_requests_are_refused_located(tmp_path: Path, request_: dict[str, Any], path: str, message: str) -> None:
    code, lines = preview(tmp_path, request_)
    assert code == 2
    assert any(f"error[REQUEST]: {path}: " in line and message in line for line in lines), lines


def test_a_well_paired_history_with_images_builds(tmp_path: Path) -> None:
    request = history(
        {"role": "assistant", "tool_calls": [call("c1"), call("c2", arguments={"q": 1})]},
        {"role": "tool", "tool_call_id": "c2", "content": "b"},
        {"role": "tool", "tool_call_id": "c1", "content": "a", "images": [{"media_type": "image/png", "data": "iVBORw0KGgo="}]},
        {"role": "user", "content": [{"type": "text", "text": "and"},
                                     {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
                                     {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]},
    )
    code, lines = preview(tmp_path, request)
    assert code == 0, lines


def test_every_problem_in_one_pass(tmp_path: Path) -> None:
    code, lines = preview(tmp_path, history(
        {"role": "assistant", "tool_calls": [call("c1", "nope"), call("c1", arguments="[]")]},
    ))
    assert code == 2 and len(lines) == 4, lines
