"""Each dict-map-rewriting sanitiser with the response policy its presets pair it with.

The model's answer is written against the sanitised schema it was shown (and checked against
it); after the response policy the arguments must be exactly what the tool's own declared
schema describes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from capplan.executor.policies.response_policy import ResponsePolicy, param_types_from_tools
from capplan.executor.policies.schema_sanitizer import ToolSchemaSanitizer
from capplan.executor.registry import policy_class

FIXTURES = Path(__file__).parent / "fixtures"

PAIRS = [
    ("strict", "array_dict_map"),
    ("gemini", "array_dict_map"),
    ("gemini_recursive", "scalar_array_dict_map"),
    ("cohere_recursive", "scalar_array_dict_map"),
    ("xai_grok_recursive", "scalar_array_dict_map"),
]
#: every strict-family sanitiser carries fieldless values; array_dict_map itself reverses them
CARRYING = {"strict", "gemini", "gemini_recursive", "cohere_recursive", "xai_grok_recursive"}
LIFTING_UNIONS = {"gemini", "gemini_recursive", "xai_grok_recursive"}

MAPS_NATIVE = {
    "levels": {"SKU-1": {"qty": 2}, "SKU-2": {"qty": 1, "note": "fragile"}},
    "counts": {"SKU-1": 5},
    "maybe_levels": {"X": {"qty": 0}},
    "order": {"customer": "acme", "lines": {"L1": {"qty": 3}}},
    "metadata": {"source": "crm"},
}
TICKET = {"kind": "ticket", "subject": "printer"}
CHAT = {"kind": "chat", "channel": "web", "subject": "refund"}
UNION_NATIVE = {"item": TICKET, "bare": CHAT, "by_id": {"t1": TICKET, "c1": CHAT}}


def maps_wire(sanitizer: str) -> dict[str, Any]:
    counts: Any = [{"key": "SKU-1", "value": 5}] if sanitizer in CARRYING else {"SKU-1": 5}
    return {
        "levels": [{"key": "SKU-1", "qty": 2}, {"key": "SKU-2", "qty": 1, "note": "fragile"}],
        "counts": counts,
        "maybe_levels": [{"key": "X", "qty": 0}],
        "order": {"customer": "acme", "lines": [{"key": "L1", "qty": 3}]},
        "metadata": {"source": "crm"},
    }


def union_wire(sanitizer: str) -> dict[str, Any]:
    by_id: Any
    if sanitizer in LIFTING_UNIONS:
        by_id = [{"key": "t1", **TICKET}, {"key": "c1", **CHAT}]
    elif sanitizer in CARRYING:
        by_id = [{"key": "t1", "value": TICKET}, {"key": "c1", "value": CHAT}]
    else:
        by_id = {"t1": TICKET, "c1": CHAT}
    return {"item": TICKET, "bare": CHAT, "by_id": by_id}


@pytest.mark.parametrize(("sanitizer", "response"), PAIRS)
@pytest.mark.parametrize(
    ("fixture", "native", "wire"),
    [
        ("tools_dict_maps.json", MAPS_NATIVE, maps_wire),
        ("tools_discriminated_union.json", UNION_NATIVE, union_wire),
    ],
)
def test_what_the_model_was_shown_comes_back_as_what_the_tool_declared(
    sanitizer: str, response: str, fixture: str, native: dict[str, Any], wire: Any
) -> None:
    tools = json.loads((FIXTURES / fixture).read_text())
    (declared,) = tools
    name = declared["function"]["name"]
    shown: ToolSchemaSanitizer = policy_class("schema_sanitizer", sanitizer)()
    policy: ResponsePolicy = policy_class("response_policy", response)()
    (sanitized,) = shown.sanitize(tools)

    emitted = wire(sanitizer)
    Draft202012Validator(sanitized["function"]["parameters"]).validate(emitted)
    recovered = policy.parse_arguments(emitted, param_types=param_types_from_tools(tools)[name])

    assert recovered == native
    Draft202012Validator(declared["function"]["parameters"]).validate(recovered)
