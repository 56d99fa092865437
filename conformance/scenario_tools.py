"""The tools conformance scenarios offer the model: pure functions and their OpenAI-style specs.

They are capplan's own (no task file, no task code is read: only ``trial run`` imports code a
file names). Their answers are fixed, so every run of a scenario sends the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

#: what ``lookup`` knows
FACTS: dict[str, str] = {"alpha": "1", "beta": "2", "gamma": "3"}


def lookup(key: str) -> str:
    """The fact filed under ``key`` (``unknown`` when there is none)."""
    return FACTS.get(key, "unknown")


def add(a: int, b: int) -> int:
    """``a + b``."""
    return a + b


def book(kind: str, who: dict[str, Any], when: str | int | None = None, tags: dict[str, str] | None = None) -> str:
    """A booking confirmation naming what was booked (the rich-schema tool)."""
    return json.dumps({"booked": kind, "for": who.get("name"), "when": when, "tags": tags or {}}, sort_keys=True)


FUNCTIONS: dict[str, Callable[..., Any]] = {"lookup": lookup, "add": add, "book": book}


def method(name: str) -> Callable[..., Any] | None:
    """The function a call names (the tool runner's lookup); None for an unknown tool."""
    return FUNCTIONS.get(name)


def _spec(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


LOOKUP = _spec("lookup", "Look up the fact filed under a key.", {
    "type": "object", "properties": {"key": {"type": "string", "description": "The key."}}, "required": ["key"]})
ADD = _spec("add", "Add two integers.", {
    "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]})

#: every JSON-Schema keyword providers disagree on, in one tool: `$schema`, `const`, `anyOf`,
#: `$ref` into `$defs`, `propertyNames` and `additionalProperties` (both as false and as a schema)
BOOK = _spec("book", "Book a trip for a person.", {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "kind": {"const": "flight", "description": "What is booked."},
        "who": {"$ref": "#/$defs/person"},
        "when": {"anyOf": [{"type": "string"}, {"type": "integer"}], "description": "A date or a day number."},
        "tags": {"type": "object", "propertyNames": {"pattern": "^[a-z]+$"},
                 "additionalProperties": {"type": "string"}},
    },
    "required": ["kind", "who"],
    "additionalProperties": False,
    "$defs": {"person": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"],
                         "additionalProperties": False}},
})

#: the tools most scenarios offer
BASIC: tuple[dict[str, Any], ...] = (LOOKUP, ADD)
