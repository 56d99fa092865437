"""Tool-schema feature questions: one tiny tool per JSON-Schema feature, asked only where the plan keeps it.

Each question sends one tool whose only parameter uses exactly one feature (``enum``, ``format``,
``pattern``, bounds, ``anyOf`` / ``oneOf`` / ``allOf``, ``$ref`` with ``$defs``, a nested object, an
array of objects, a typed map, ``default``, ``additionalProperties: false``), built by the plan's
own request builder, so its schema sanitiser runs and the wire is the one a trial sends. Each
feature is asked twice: as trials' tools usually come (no ``strict``), and inside a ``strict: true``
tool (``strict+<feature>``), because strict validators are where routes refuse keywords (OpenAI's
"'allOf' is not permitted" answers a strict tool only). ``tool_schema=strict`` asks for strict
mode alone.

A feature the plan's sanitiser rewrites away (the ``strict`` sanitiser inlines ``$ref`` and turns
a typed map into entries) never reaches the route from a trial, so it is not sent: the question
is ``skipped`` with the reason, and the record still says what the plan does with it. A feature
it keeps is the plan's claim that the route takes it: a refusal is drift.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from capplan.executor.policies.schema_sanitizer import walk_schemas

#: the parameter name of every feature question (its id is ``tool_schema=<feature>``)
PARAM = "tool_schema"
#: the name of the tiny tool and its one property
TOOL_NAME = "echo"
PROPERTY = "value"

#: feature -> the schema of the tool's one property (``ref_defs`` and ``additional_properties_false``
#: also change the parameters root: see :func:`parameters`)
FEATURES: dict[str, dict[str, Any]] = {
    "enum": {"type": "string", "enum": ["red", "green"]},
    "format": {"type": "string", "format": "date-time"},
    "pattern": {"type": "string", "pattern": "^[a-z]+$"},
    "minimum_maximum": {"type": "integer", "minimum": 0, "maximum": 10},
    "string_length": {"type": "string", "minLength": 1, "maxLength": 8},
    "array_length": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
    "anyOf": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
    "oneOf": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
    "allOf": {"allOf": [{"type": "string"}]},
    "ref_defs": {"$ref": "#/$defs/Word"},
    "nested_object": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]},
    "array_of_objects": {"type": "array", "items": {
        "type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}},
    "typed_map": {"type": "object", "additionalProperties": {"type": "integer"}},
    "default": {"type": "string", "default": "red"},
    "additional_properties_false": {"type": "string"},
}
#: features with no strict form: strict mode demands ``additionalProperties: false`` on every
#: object (a typed map is the opposite), and the root's is what ``tool_schema=strict`` asks already
NO_STRICT_FORM = frozenset({"typed_map", "additional_properties_false"})

#: what an overlay could change where a route refuses a kept feature; the probe record carries it
#: (the snippet holds value rules only)
REMEDY: dict[str, str] = {
    "ref_defs": "an overlay setting schema_sanitizer: strict (providers: <provider>:) inlines $ref and drops $defs",
    "typed_map": ("an overlay setting schema_sanitizer: strict (providers: <provider>:) sends a typed map as an "
                  "array of entries"),
}
NO_REMEDY = "no schema sanitiser capplan ships drops this feature: the record is the evidence, no snippet rule holds it"


def feature_ids() -> list[str]:
    """Every question id of this family, in the order they are asked."""
    ids = [f"{PARAM}={name}" for name in FEATURES]
    ids.append(f"{PARAM}=strict")
    ids += [f"{PARAM}=strict+{name}" for name in FEATURES if name not in NO_STRICT_FORM]
    return ids


def parameters(feature: str, *, strict: bool) -> dict[str, Any]:
    """The tool's parameters schema for ``feature`` (``strict``: made strict at every object level)."""
    prop = _copy(FEATURES[feature]) if feature else {"type": "string"}
    root: dict[str, Any] = {"type": "object", "properties": {PROPERTY: prop}, "required": [PROPERTY]}
    if feature == "ref_defs":
        root["$defs"] = {"Word": {"type": "string"}}
    if strict or feature == "additional_properties_false":
        root["additionalProperties"] = False
    if strict:
        for _, node in walk_schemas(root):
            if node is not root and node.get("type") == "object" and "properties" in node:
                node["additionalProperties"] = False
    return root


def tool(feature: str, *, strict: bool) -> dict[str, Any]:
    """The tiny tool of one question, in the OpenAI ``{type: function, function: {...}}`` shape."""
    function: dict[str, Any] = {"name": TOOL_NAME, "description": "Echo a value back.",
                                "parameters": parameters(feature, strict=strict)}
    if strict:
        function["strict"] = True
    return {"type": "function", "function": function}


def wire_tool(body: Mapping[str, Any]) -> tuple[Mapping[str, Any], bool] | None:
    """The first tool's parameters and strict flag in a wire body (chat or Responses shaped)."""
    tools = body.get("tools")
    if not isinstance(tools, list) or not tools or not isinstance(tools[0], Mapping):
        return None
    first: Mapping[str, Any] = tools[0]
    nested = first.get("function")
    holder: Mapping[str, Any] = nested if isinstance(nested, Mapping) else first
    params = holder.get("parameters")
    if not isinstance(params, Mapping):
        return None
    return params, holder.get("strict") is True


def _has_keyword(*keywords: str) -> Callable[[Mapping[str, Any]], bool]:
    def found(params: Mapping[str, Any]) -> bool:
        return any(all(k in node for k in keywords) for _, node in walk_schemas(dict(params)))
    return found


def _property(params: Mapping[str, Any]) -> Mapping[str, Any]:
    props = params.get("properties")
    prop = props.get(PROPERTY) if isinstance(props, Mapping) else None
    return prop if isinstance(prop, Mapping) else {}


def _object_with_fields(node: Any) -> bool:
    return isinstance(node, Mapping) and node.get("type") == "object" and isinstance(node.get("properties"), Mapping)


#: feature -> whether a sanitised parameters schema still carries it
DETECTORS: dict[str, Callable[[Mapping[str, Any]], bool]] = {
    "enum": _has_keyword("enum"),
    "format": _has_keyword("format"),
    "pattern": _has_keyword("pattern"),
    "minimum_maximum": _has_keyword("minimum", "maximum"),
    "string_length": _has_keyword("minLength", "maxLength"),
    "array_length": _has_keyword("minItems", "maxItems"),
    "anyOf": _has_keyword("anyOf"),
    "oneOf": _has_keyword("oneOf"),
    "allOf": _has_keyword("allOf"),
    "ref_defs": _has_keyword("$ref"),
    "nested_object": lambda params: _object_with_fields(_property(params)),
    "array_of_objects": lambda params: _object_with_fields(_property(params).get("items")),
    "typed_map": lambda params: isinstance(_property(params).get("additionalProperties"), Mapping),
    "default": _has_keyword("default"),
    "additional_properties_false": lambda params: params.get("additionalProperties") is False,
}


def missing_on_wire(feature: str, *, strict: bool, sanitizer: str) -> Callable[[Mapping[str, Any]], str | None]:
    """The wire check of one question: why the built body does not carry the feature (None: it does)."""
    def check(body: Mapping[str, Any]) -> str | None:
        found = wire_tool(body)
        if found is None:
            return "the plan's request carries no tool schema here"
        params, is_strict = found
        lost: list[str] = []
        if feature and not DETECTORS[feature](params):
            lost.append(feature)
        if strict and not is_strict:
            lost.append("strict: true")
        if not lost:
            return None
        return (f"the plan's schema sanitiser ({sanitizer}) rewrites {' and '.join(lost)} away: a trial never "
                "sends it, so the route is not asked")
    return check


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value
