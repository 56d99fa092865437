"""Regression guards for the three silent corruptions a keyword-blind sanitiser once shipped.

Each runs against every registered schema sanitiser, so a new one inherits the guard.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from capplan.executor.policies.schema_sanitizer import ToolSchemaSanitizer
from capplan.executor.registry import policy_class, registered_names

FIXTURES = Path(__file__).parent / "fixtures"
SANITIZERS = registered_names("schema_sanitizer")


def sanitized_props(name: str) -> dict[str, Any]:
    tools = json.loads((FIXTURES / "tools_keyword_names.json").read_text())
    sanitizer: ToolSchemaSanitizer = policy_class("schema_sanitizer", name)()
    (out,) = sanitizer.sanitize(tools)
    params = out["function"]["parameters"]
    Draft202012Validator.check_schema(params)
    props: dict[str, Any] = params["properties"]
    assert params["required"] == ["title", "examples", "format", "pattern", "pay_period", "opened_at"]
    return props


def test_every_sanitiser_is_covered() -> None:
    assert {"passthrough", "strict", "gemini", "gemini_recursive", "cohere_recursive", "xai_grok_recursive"} <= set(
        SANITIZERS
    )


@pytest.mark.parametrize("name", SANITIZERS)
def test_a_property_named_like_a_keyword_is_a_property(name: str) -> None:
    # once: properties.title was deleted as if it were the keyword, `required` kept it, and the
    # provider refused every call with "Field required"
    props = sanitized_props(name)
    assert {"title", "examples", "format", "pattern", "description"} <= set(props)
    assert props["title"]["type"] == "string" and props["examples"]["type"] == "array"
    assert props["format"]["enum"] == ["pdf", "docx"]


@pytest.mark.parametrize("name", SANITIZERS)
def test_a_free_form_object_keeps_additional_properties_and_examples(name: str) -> None:
    # once: {type: object, additionalProperties: true, examples: [...]} became bare {type: object}
    # and the model alternated between omitting, flat-packing and the right shape
    assert sanitized_props(name)["extras"] == {
        "additionalProperties": True,
        "examples": [{"channel": "phone"}],
        "title": "Extras",
        "type": "object",
    }


@pytest.mark.parametrize("name", SANITIZERS)
def test_examples_and_safe_patterns_on_primitive_strings_survive(name: str) -> None:
    # once: examples were stripped from strings, the only hint for shapes like "2024-01"
    props = sanitized_props(name)
    assert props["pay_period"]["examples"] == ["2024-01"]
    assert props["pay_period"]["pattern"] == "^\\d{4}-\\d{2}$"
    assert props["title"]["examples"] == ["Printer on fire"]
    assert props["opened_at"]["format"] == "date-time"
