"""The ``response_policy`` slot: tool-call arguments, reshaped into what the tool expects.

A policy gets the decoded argument object of one tool call and, when the tools are known,
``param_types``: root parameter name → declared type (see ``param_types_from_tools``). It
returns a new dict; it never mutates its input and never drops a value it cannot interpret
(such a value is passed on as the model emitted it, for the tool's validation to report).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from capplan.executor.policies.dict_maps import (
    DICT_MAP,
    DICT_MAP_LABELS,
    DICT_MAP_VALUE,
    entries_to_dict_map,
    has_object_fields,
    resolve_local_ref,
    tool_defs,
    typed_dict_map_value,
)
from capplan.executor.policies.schema_sanitizer import ToolShapeError, tool_parameters
from capplan.executor.policies.strict_schema import is_decimal_idiom

#: Declared types whose native value is a container, and so may arrive JSON-encoded in a string.
CONTAINER_TYPES: frozenset[str] = frozenset({"array", "object"}) | DICT_MAP_LABELS

# How far a chain of $refs is followed when typing a parameter (Pydantic emits one hop).
_MAX_REF_HOPS = 8


class ResponsePolicy(ABC):
    """Base of the ``response_policy`` slot."""

    slot: ClassVar[str] = "response_policy"
    name: ClassVar[str]

    @abstractmethod
    def parse_arguments(
        self, arguments: dict[str, Any], *, param_types: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """The arguments to hand the tool, given what the model emitted."""


class StandardResponse(ResponsePolicy):
    """The arguments as the model emitted them (routes that emit them faithfully)."""

    name: ClassVar[str] = "standard"

    def parse_arguments(
        self, arguments: dict[str, Any], *, param_types: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """A shallow copy of ``arguments``."""
        return dict(arguments)


class UnwrapInputResponse(ResponsePolicy):
    """Removes the ``{"input": {...}}`` envelope Bedrock/Nova wraps around tool arguments."""

    name: ClassVar[str] = "unwrap_input"

    def parse_arguments(
        self, arguments: dict[str, Any], *, param_types: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """The envelope's contents when ``arguments`` is exactly ``{"input": {...}}``.

        A tool that really declares a parameter named ``input`` keeps it.
        """
        inner = arguments.get("input")
        declared = param_types is not None and "input" in param_types
        if len(arguments) == 1 and isinstance(inner, dict) and not declared:
            return dict(inner)
        return dict(arguments)


class JsonCoerceResponse(ResponsePolicy):
    """Undoes open-weights models' stringification of container arguments.

    ``'["a"]'`` → ``["a"]`` and ``'{"k": 1}'`` → ``{"k": 1}``; with ``param_types``, also
    ``""`` → ``[]`` / ``{}`` for declared array / object parameters.
    """

    name: ClassVar[str] = "json_coerce"

    def parse_arguments(
        self, arguments: dict[str, Any], *, param_types: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """``coerce_json_strings`` then ``coerce_empty_containers``."""
        return coerce_empty_containers(coerce_json_strings(arguments, param_types=param_types), param_types)


class ArrayDictMapResponse(ResponsePolicy):
    """Turns dict-map entry arrays back into maps, after ``json_coerce``'s repairs.

    Pairs with a sanitiser that shows dict-maps as ``[{key, …}]``: for every parameter
    ``param_types`` labels a dict-map (at the root, or one level inside an object parameter),
    an emitted entry list becomes the map. Nothing is pivoted without ``param_types``: a
    genuine list of ``{key, …}`` objects looks exactly like an entry list.
    """

    name: ClassVar[str] = "array_dict_map"

    #: Entry field holding the map key (matches ``StrictSchema.KEY_FIELD``).
    KEY_FIELD: ClassVar[str] = "key"
    #: Entry field holding a carried value (matches ``StrictSchema.VALUE_FIELD``).
    VALUE_FIELD: ClassVar[str] = "value"

    def parse_arguments(
        self, arguments: dict[str, Any], *, param_types: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """Coerced arguments with every declared dict-map's entry list pivoted back into a map."""
        coerced = coerce_empty_containers(coerce_json_strings(arguments, param_types=param_types), param_types)
        if not param_types:
            return coerced
        return apply_at_dict_maps(coerced, param_types, self.pivot_entries)

    def pivot_entries(self, value: Any, label: str) -> Any:
        """``value`` as a map when it is an entry list, else unchanged."""
        pivoted = entries_to_dict_map(value, label=label, key_field=self.KEY_FIELD, value_field=self.VALUE_FIELD)
        return value if pivoted is None else pivoted


def coerce_json_strings(
    arguments: Mapping[str, Any], *, param_types: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Decode root arguments that are JSON-encoded arrays or objects back to native values.

    A string qualifies when its first non-blank character is ``[`` or ``{`` and ``json.loads``
    returns a list or dict. Scalar JSON (``"42"``, ``"true"``) is never promoted: string ids
    would silently change type. With ``param_types``, a parameter declared as a non-container
    (a ``string`` that happens to hold JSON, say) is left alone.
    """
    out: dict[str, Any] = {}
    for name, value in arguments.items():
        declared = param_types.get(name) if param_types is not None else None
        if isinstance(value, str) and (declared is None or declared in CONTAINER_TYPES):
            decoded = _decode_container(value)
            out[name] = value if decoded is None else decoded
        else:
            out[name] = value
    return out


def coerce_empty_containers(arguments: Mapping[str, Any], param_types: Mapping[str, str] | None) -> dict[str, Any]:
    """``""`` → ``[]`` for declared arrays and ``""`` → ``{}`` for declared objects and dict-maps.

    A no-op without ``param_types``; ``""`` for a ``string`` (or undeclared) parameter stays.
    """
    out = dict(arguments)
    if not param_types:
        return out
    for name, value in arguments.items():
        if value != "" or not isinstance(value, str):
            continue
        declared = param_types.get(name)
        if declared == "array":
            out[name] = []
        elif declared == "object" or declared in DICT_MAP_LABELS:
            out[name] = {}
    return out


def apply_at_dict_maps(
    arguments: Mapping[str, Any], param_types: Mapping[str, str], fn: Callable[[Any, str], Any]
) -> dict[str, Any]:
    """``fn(value, label)`` applied to every argument ``param_types`` labels a dict-map.

    Root parameters are keyed by name, maps one level inside an object parameter by
    ``"<param>.<field>"``; a value the model did not emit is not invented.
    """
    out = dict(arguments)
    for path, label in param_types.items():
        if label not in DICT_MAP_LABELS:
            continue
        if path in out:
            out[path] = fn(out[path], label)
            continue
        parent, dot, field = path.partition(".")
        container = out.get(parent)
        if dot and isinstance(container, dict) and field in container:
            out[parent] = {**container, field: fn(container[field], label)}
    return out


def param_types_from_tools(tools: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """Tool name → parameter → declared type, for the response policies' schema-aware repairs.

    Pass the tools **as the caller declared them**, not as sanitised: a sanitised dict-map is a
    ``[{key, …}]`` array, indistinguishable from a genuine list of such objects, so only the
    declaration says which arrays are maps. Types are JSON-Schema type names as the tool's own
    validation sees them (``$ref`` followed, ``Optional[X]`` typed as ``X``, Pydantic's Decimal
    ``anyOf`` as ``number``, a union of objects as ``object``), with typed dict-maps labelled
    ``dict_map`` (object values with fields) or ``dict_map_value`` (any other values). A dict-map
    one level inside an object parameter is listed as ``"<param>.<field>"``. Parameters with no
    single type are omitted.
    """
    result: dict[str, dict[str, str]] = {}
    for tool in tools:
        name, params = tool_parameters(tool)
        if name in result:
            raise ToolShapeError(name, "", "two tools share this name; a call could not be matched to its schema")
        types: dict[str, str] = {}
        props = params.get("properties") if params is not None else None
        defs = tool_defs(params) if params is not None else {}
        for prop, schema in props.items() if isinstance(props, dict) else ():
            declared = declared_type(schema, defs)
            if declared is not None:
                types[prop] = declared
            if declared == "object" and "." not in prop:
                types.update(_nested_dict_maps(prop, schema, defs))
        result[name] = types
    return result


def declared_type(schema: Any, defs: Mapping[str, Any]) -> str | None:
    """The one type a parameter schema declares (see ``param_types_from_tools``), or ``None``."""
    node = resolve_local_ref(schema, defs, max_hops=_MAX_REF_HOPS)
    if not isinstance(node, dict):
        return None
    value = typed_dict_map_value(node)
    if value is not None:
        resolved = resolve_local_ref(value, defs, max_hops=_MAX_REF_HOPS)
        return DICT_MAP if has_object_fields(resolved) else DICT_MAP_VALUE
    declared = node.get("type")
    if isinstance(declared, str):
        return declared
    if isinstance(declared, list):
        non_null = [t for t in declared if t != "null"]
        return non_null[0] if len(non_null) == 1 and isinstance(non_null[0], str) else None
    if is_decimal_idiom(node):
        return "number"
    for keyword in ("anyOf", "oneOf"):
        branches = node.get(keyword)
        if isinstance(branches, list) and branches:
            kinds = {declared_type(b, defs) for b in branches if not _is_null(b, defs)}
            return kinds.pop() if len(kinds) == 1 and None not in kinds else None
    return "object" if isinstance(node.get("properties"), dict) else None


def _nested_dict_maps(prop: str, schema: Any, defs: Mapping[str, Any]) -> dict[str, str]:
    node = _object_schema(schema, defs)
    nested = node.get("properties") if node is not None else None
    found: dict[str, str] = {}
    for field, sub in nested.items() if isinstance(nested, dict) else ():
        declared = declared_type(sub, defs)
        if declared in DICT_MAP_LABELS:
            assert declared is not None
            found[f"{prop}.{field}"] = declared
    return found


def _object_schema(schema: Any, defs: Mapping[str, Any]) -> dict[str, Any] | None:
    # the object an object-typed parameter declares, through refs and an Optional wrapper
    node = resolve_local_ref(schema, defs, max_hops=_MAX_REF_HOPS)
    if not isinstance(node, dict):
        return None
    if isinstance(node.get("properties"), dict):
        return node
    branches = node.get("anyOf") or node.get("oneOf")
    if isinstance(branches, list):
        objects = [b for b in branches if not _is_null(b, defs)]
        if len(objects) == 1:
            return _object_schema(objects[0], defs)
    return None


def _is_null(schema: Any, defs: Mapping[str, Any]) -> bool:
    node = resolve_local_ref(schema, defs, max_hops=_MAX_REF_HOPS)
    return isinstance(node, dict) and node.get("type") == "null"


def _decode_container(text: str) -> Any:
    stripped = text.lstrip()
    if not stripped or stripped[0] not in "[{":
        return None
    try:
        decoded = json.loads(text)
    except ValueError:
        return None
    return decoded if isinstance(decoded, (list, dict)) else None
