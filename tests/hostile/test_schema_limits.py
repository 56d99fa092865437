"""$ref expansion in the sanitisers is bounded: fan-out bombs, long chains and deep schemas fail fast, located."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from capplan.core.input_limits import MAX_REF_DEPTH, MAX_SCHEMA_NODES
from capplan.executor.policies.schema_sanitizer import ToolSchemaError
from capplan.executor.registry import policy_class
from tests.cli_runner import invoke

REPO = Path(__file__).resolve().parents[2]
PLANS = ["gemini-3.1-pro-preview", "cohere-command-a-plus", "gpt-5", "grok-4"]


def tool(params: dict[str, Any], name: str = "t") -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": params}}


def fan_out(levels: int = 12, width: int = 8) -> dict[str, Any]:
    """A 3 KB schema whose definitions each use the next one ``width`` times: width**levels nodes inlined."""
    defs: dict[str, Any] = {f"d{levels - 1}": {"type": "string"}}
    for i in range(levels - 1):
        defs[f"d{i}"] = {"type": "object", "properties": {f"p{k}": {"$ref": f"#/$defs/d{i + 1}"} for k in range(width)}}
    return tool({"type": "object", "properties": {"x": {"$ref": "#/$defs/d0"}}, "$defs": defs}, "bomb")


def chain(steps: int = 3000) -> dict[str, Any]:
    defs: dict[str, Any] = {f"c{i}": {"$ref": f"#/$defs/c{i + 1}"} for i in range(steps)}
    defs[f"c{steps}"] = {"type": "string"}
    return tool({"type": "object", "properties": {"x": {"$ref": "#/$defs/c0"}}, "$defs": defs}, "chain")


def deep(levels: int = 400) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        node = {"type": "object", "properties": {"a": node}}
    return tool(node, "deep")


@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize(("make", "message"), [(fan_out, f"past {MAX_SCHEMA_NODES} subschemas"),
                                               (chain, f"deeper than {MAX_REF_DEPTH} $refs")])
def test_preview_refuses_ref_bombs_located(tmp_path: Path, plan: str, make: Any, message: str) -> None:
    request = tmp_path / "r.json"
    request.write_text(json.dumps({"tools": [make()], "messages": [{"role": "user", "content": "hi"}]}))
    result = invoke("preview", "--plan", str(REPO / "golden" / "plans" / f"{plan}.json"), str(request))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    assert result.exit_code == 2 and "Traceback" not in result.output
    if plan in ("gemini-3.1-pro-preview", "cohere-command-a-plus", "grok-4"):
        assert f"{request}: error[TOOL_SCHEMA]: tool '" in result.output and message in result.output, result.output


@pytest.mark.parametrize(("slot_name", "make"), [("gemini_recursive", deep), ("cohere_recursive", deep),
                                                 ("strict", chain), ("gemini", fan_out)])
def test_python_callers_get_a_typed_error_not_a_recursion_error(slot_name: str, make: Any) -> None:
    sanitizer = policy_class("schema_sanitizer", slot_name)()
    with pytest.raises(ToolSchemaError, match="deeper than|subschemas"):
        sanitizer.sanitize([make()])


def test_a_deep_schema_in_a_request_file_stops_at_the_nesting_limit(tmp_path: Path) -> None:
    request = tmp_path / "r.json"
    request.write_text(json.dumps({"tools": [deep()], "messages": [{"role": "user", "content": "hi"}]}))
    result = invoke("preview", "--plan", str(REPO / "golden" / "plans" / "gpt-5.json"), str(request))
    assert result.exit_code == 2 and "nested more than 64 levels deep" in result.output


def test_ordinary_refs_still_inline() -> None:
    sanitizer = policy_class("schema_sanitizer", "gemini")()
    out = sanitizer.sanitize([fan_out(levels=3, width=3)])
    props = out[0]["function"]["parameters"]["properties"]["x"]["properties"]
    assert props["p0"]["properties"]["p2"] == {"type": "string"}
