"""Prompt policies: no enrichment, dict-map hints, and the ref-resolving variant."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from capplan.executor.families.inkling import RefResolvingDictMapHints
from capplan.executor.policies.dict_maps import DictMapParam, detect_dict_maps
from capplan.executor.policies.prompt_policy import DictMapHints, NoPromptEnrichment, SystemPromptPolicy

FIXTURES = Path(__file__).parent / "fixtures"
TOOLS: list[dict[str, Any]] = json.loads((FIXTURES / "tools_dict_maps.json").read_text())

LEVELS_HINT = """Tool `set_inventory`, argument `levels`: always include it. \
It is a JSON object whose keys are string identifiers and whose values are objects with these fields:
  - "qty" (integer)
  - "note" (string | null)
  Example: {"levels": {"example_key": {"qty": 0, "note": "example"}}}
  Never leave `levels` out of the call."""
METADATA_HINT = (
    "Tool `set_inventory`, argument `metadata`: always include it, as a JSON object with string keys. "
    "Free-form metadata."
)


def inline_map_tool() -> dict[str, Any]:
    value = {"type": "object", "properties": {"amount": {"type": "number"}, "currency": {"enum": ["EUR", "USD"]}}}
    params = {
        "type": "object",
        "properties": {
            "prices": {"type": "object", "additionalProperties": value},
            "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
            "loose": {"type": "object", "additionalProperties": True},
            "name": {"type": "string"},
        },
    }
    return {"type": "function", "function": {"name": "set_prices", "parameters": params}}


def test_no_enrichment_returns_the_prompt_unchanged() -> None:
    assert NoPromptEnrichment().enrich("You are terse.", TOOLS) == "You are terse."
    assert issubclass(NoPromptEnrichment, SystemPromptPolicy) and NoPromptEnrichment.name == "none"


def test_hints_describe_inline_object_valued_maps() -> None:
    out = DictMapHints().enrich("Base.", [inline_map_tool()])
    assert out == (
        "Base.\n\n"
        "Tool `set_prices`, argument `prices`: always include it. It is a JSON object whose keys are string "
        "identifiers and whose values are objects with these fields:\n"
        '  - "amount" (number)\n'
        '  - "currency" (one of "EUR", "USD")\n'
        '  Example: {"prices": {"example_key": {"amount": 0.0, "currency": "EUR"}}}\n'
        "  Never leave `prices` out of the call."
    )


def test_plain_hints_skip_ref_values_and_nested_maps() -> None:
    assert DictMapHints().enrich("Base.", TOOLS) == "Base.\n\n" + METADATA_HINT


def test_no_prompt_or_no_tools_means_no_hints() -> None:
    class Counting(DictMapHints):
        def __init__(self) -> None:
            self.calls = 0

        def build_hints(self, tools: list[dict[str, Any]]) -> str:
            self.calls += 1
            return "\n\nextra"

    policy = Counting()
    assert policy.enrich("", TOOLS) == ""
    assert policy.enrich("Base.", []) == "Base."
    assert policy.calls == 0
    assert policy.enrich("Base.", TOOLS) == "Base.\n\nextra" and policy.calls == 1


def test_a_prompt_without_dict_maps_is_unchanged() -> None:
    plain = {
        "type": "function",
        "function": {"name": "p", "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}},
    }
    assert DictMapHints().enrich("Base.", [plain]) == "Base."


def test_detection_reports_declared_maps_in_order() -> None:
    found = detect_dict_maps([inline_map_tool()])
    assert [(p.param_name, p.value_schema is None) for p in found] == [
        ("prices", False),
        ("counts", False),
        ("loose", True),
    ]
    assert DictMapParam("t", ("a", "b"), None).example_arguments() == {"a": {"b": {"example_key": {}}}}


def test_ref_resolving_hints_reach_ref_values_and_one_level_in() -> None:
    before = copy.deepcopy(TOOLS)
    out = RefResolvingDictMapHints().enrich("Base.", TOOLS)
    assert before == TOOLS
    paragraphs = out.split("\n\n")
    assert paragraphs[0] == "Base." and paragraphs[1] == LEVELS_HINT
    assert [p.split("`")[3] for p in paragraphs[1:]] == ["levels", "maybe_levels", "order.lines", "metadata"]
    assert '  Example: {"order": {"lines": {"example_key": {"qty": 0, "note": "example"}}}}' in out
    assert paragraphs[-1] == METADATA_HINT


def test_ref_resolving_hints_match_the_plain_ones_where_those_already_fire() -> None:
    tools = [inline_map_tool()]
    assert RefResolvingDictMapHints().enrich("Base.", tools) == DictMapHints().enrich("Base.", tools)
