"""Typed dict-maps: ``Dict[str, T]`` parameters, as schemas, hints and emitted arguments.

Pydantic renders ``Dict[str, T]`` as ``{"type": "object", "additionalProperties": <T>}``. Strict
routes lose such parameters, so a strict sanitiser shows them as an array of entries (the map
key under a synthetic key field, the value's fields beside it, or the whole value under a
synthetic value field), a prompt policy may spell them out in the system prompt, and a
response policy turns the entries the model emits back into the map the tool expects. The
helpers those three share live here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: ``param_types`` label: a dict-map whose values are objects with declared fields. The model
#: may emit it as ``[{key, <fields>…}]``; each entry becomes ``{key: {<fields>…}}``.
DICT_MAP = "dict_map"
#: ``param_types`` label: a dict-map whose values are anything else (scalars, lists, unions). The
#: model may emit it as ``[{key, value}]``; each entry becomes ``{key: value}``.
DICT_MAP_VALUE = "dict_map_value"
#: Both labels: the tool's native shape is a JSON object either way.
DICT_MAP_LABELS: frozenset[str] = frozenset({DICT_MAP, DICT_MAP_VALUE})

_LOCAL_REF_PREFIXES = ("#/$defs/", "#/definitions/")


def find_additional_properties(prop_schema: Mapping[str, Any]) -> Any:
    """The ``additionalProperties`` a property declares, on itself or on an ``anyOf``/``oneOf`` branch.

    Covers Pydantic's ``Optional[Dict[str, T]]`` (``anyOf: [{additionalProperties: T}, {type:
    null}]``). Returns the declaration (a schema, ``True`` or ``False``), or ``None`` when there
    is none. A branch that declares ``False`` is reported only when no branch declares a map.
    """
    if "additionalProperties" in prop_schema:
        return prop_schema["additionalProperties"]
    closed = None
    for keyword in ("anyOf", "oneOf"):
        branches = prop_schema.get(keyword)
        if not isinstance(branches, list):
            continue
        for branch in branches:
            if isinstance(branch, Mapping) and "additionalProperties" in branch:
                declared = branch["additionalProperties"]
                if declared is not False:
                    return declared
                closed = False
    return closed


def typed_dict_map_value(schema: Any) -> dict[str, Any] | None:
    """The value schema when ``schema`` itself is a pure typed dict-map, else ``None``.

    Pure means: ``type: object``, a non-empty ``additionalProperties`` schema, and no named
    properties or required keys that an array of entries could not express. ``additionalProperties:
    true`` (or ``{}``) is a free-form object, not a typed map.
    """
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        return None
    value = schema.get("additionalProperties")
    if not isinstance(value, dict) or not value:
        return None
    if schema.get("properties") or schema.get("patternProperties") or "required" in schema:
        return None
    return value


def local_ref_name(ref: str) -> str | None:
    """The definition name a local ``#/$defs/<name>`` (or ``#/definitions/<name>``) ref points at."""
    for prefix in _LOCAL_REF_PREFIXES:
        if ref.startswith(prefix):
            name = ref[len(prefix) :]
            if name and "/" not in name:
                return name.replace("~1", "/").replace("~0", "~")
    return None


def tool_defs(params: Mapping[str, Any]) -> dict[str, Any]:
    """The definitions a parameters schema declares (``$defs`` and the older ``definitions``)."""
    defs: dict[str, Any] = {}
    for keyword in ("definitions", "$defs"):
        block = params.get(keyword)
        if isinstance(block, dict):
            defs.update(block)
    return defs


def resolve_local_ref(schema: Any, defs: Mapping[str, Any], *, max_hops: int = 1) -> Any:
    """Follow up to ``max_hops`` local ``$ref`` hops; anything unresolvable comes back as given."""
    for _ in range(max_hops):
        if not isinstance(schema, Mapping):
            return schema
        ref = schema.get("$ref")
        name = local_ref_name(ref) if isinstance(ref, str) else None
        target = defs.get(name) if name is not None else None
        if not isinstance(target, dict):
            return schema
        siblings = {k: v for k, v in schema.items() if k != "$ref"}
        schema = {**target, **siblings}
    return schema


def has_object_fields(schema: Any) -> bool:
    """Whether ``schema`` is an object with named properties (whose fields an entry can carry)."""
    return (
        isinstance(schema, Mapping)
        and schema.get("type", "object") == "object"
        and isinstance(schema.get("properties"), dict)
        and bool(schema["properties"])
    )


def schema_type_name(schema: Any) -> str:
    """A short human name for a schema's type, for prompt hints (``string | null``, ``Line`` …)."""
    if not isinstance(schema, Mapping):
        return "any"
    declared = schema.get("type")
    if isinstance(declared, str):
        return declared
    if isinstance(declared, list) and all(isinstance(t, str) for t in declared):
        return " | ".join(declared)
    for keyword in ("anyOf", "oneOf"):
        branches = schema.get(keyword)
        if isinstance(branches, list) and branches:
            return " | ".join(schema_type_name(b) for b in branches)
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return ref.rsplit("/", 1)[-1]
    if "const" in schema:
        return json.dumps(schema["const"])
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return "one of " + ", ".join(json.dumps(v) for v in schema["enum"])
    return "any"


def example_for(schema: Any) -> Any:
    """A placeholder value of the schema's shape, for prompt examples."""
    if not isinstance(schema, Mapping):
        return None
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    declared = schema.get("type")
    if isinstance(declared, list):
        declared = next((t for t in declared if t != "null"), None)
    placeholders: dict[Any, Any] = {
        "string": "example",
        "integer": 0,
        "number": 0.0,
        "boolean": True,
        "array": [],
        "object": {},
        "null": None,
    }
    if declared in placeholders:
        return placeholders[declared]
    for keyword in ("anyOf", "oneOf"):
        branches = schema.get(keyword)
        if isinstance(branches, list):
            for branch in branches:
                if isinstance(branch, Mapping) and branch.get("type") != "null":
                    return example_for(branch)
    return None


@dataclass(frozen=True)
class DictMapParam:
    """One dict-map parameter of one tool, as a prompt hint describes it.

    ``path`` is the parameter's position (``("lines",)`` at the root, ``("order", "lines")`` one
    level inside an object parameter). ``value_schema`` is ``None`` for a free-form map
    (``additionalProperties: true``).
    """

    tool_name: str
    path: tuple[str, ...]
    value_schema: dict[str, Any] | None
    description: str = ""

    @property
    def param_name(self) -> str:
        """The dotted display name (``order.lines``)."""
        return ".".join(self.path)

    @property
    def value_fields(self) -> list[tuple[str, str]]:
        """``(field, type name)`` for each declared field of an object-valued map."""
        if not has_object_fields(self.value_schema):
            return []
        assert self.value_schema is not None
        return [(name, schema_type_name(sub)) for name, sub in self.value_schema["properties"].items()]

    def example_arguments(self) -> dict[str, Any]:
        """Arguments holding one example entry, nested along ``path``."""
        entry: Any = {"example_key": _example_value_object(self.value_schema)}
        for segment in reversed(self.path):
            entry = {segment: entry}
        result: dict[str, Any] = entry
        return result


def _example_value_object(value_schema: dict[str, Any] | None) -> dict[str, Any]:
    if not has_object_fields(value_schema):
        return {}
    assert value_schema is not None
    return {name: example_for(sub) for name, sub in value_schema["properties"].items()}


def detect_dict_maps(tools: list[dict[str, Any]]) -> list[DictMapParam]:
    """Root-level dict-map parameters of every tool, as declared (``$ref`` values left unresolved)."""
    found: list[DictMapParam] = []
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict):
            continue
        params = function.get("parameters")
        props = params.get("properties") if isinstance(params, dict) else None
        if not isinstance(props, dict):
            continue
        for prop_name, prop_schema in props.items():
            if not isinstance(prop_schema, dict):
                continue
            declared = find_additional_properties(prop_schema)
            if declared is None or declared is False:
                continue
            found.append(
                DictMapParam(
                    tool_name=str(function.get("name", "")),
                    path=(prop_name,),
                    value_schema=declared if isinstance(declared, dict) else None,
                    description=str(prop_schema.get("description") or ""),
                )
            )
    return found


def dict_map_hint(param: DictMapParam) -> str | None:
    """The system-prompt paragraph for one dict-map, or ``None`` when there is nothing to say.

    Typed maps are described only when their values are objects with declared fields, and
    free-form maps only when they carry a description: those are the shapes the hint text was
    measured on, and a hint with nothing concrete in it is noise in every request.
    """
    name, tool = param.param_name, param.tool_name
    if param.value_schema is not None:
        fields = param.value_fields
        if not fields:
            return None
        lines = [
            f"Tool `{tool}`, argument `{name}`: always include it. It is a JSON object whose keys are "
            "string identifiers and whose values are objects with these fields:"
        ]
        lines += [f'  - "{field}" ({type_name})' for field, type_name in fields]
        lines.append(f"  Example: {json.dumps(param.example_arguments())}")
        lines.append(f"  Never leave `{name}` out of the call.")
        return "\n".join(lines)
    if param.description:
        return (
            f"Tool `{tool}`, argument `{name}`: always include it, as a JSON object with string keys. "
            f"{param.description}"
        )
    return None


def dict_map_hints_text(params: Iterable[DictMapParam]) -> str:
    """The system-prompt suffix for ``params``: ``""``, or a blank line and one paragraph per map."""
    hints = [hint for param in params if (hint := dict_map_hint(param))]
    return "\n\n" + "\n\n".join(hints) if hints else ""


def dict_map_to_entries(instance: Any, *, key_field: str, value_field: str | None) -> list[dict[str, Any]] | None:
    """A map instance as the entry list a sanitised schema describes, or ``None`` if it has no such form.

    With ``value_field`` each value is carried whole under it; without, an object value's fields
    sit beside the key (and a non-object value, or one already using the key field, has no form).
    """
    if not isinstance(instance, dict):
        return None
    entries: list[dict[str, Any]] = []
    for key, value in instance.items():
        if value_field is not None:
            entries.append({key_field: key, value_field: value})
        elif isinstance(value, dict) and key_field not in value:
            entries.append({key_field: key, **value})
        else:
            return None
    return entries


def entries_to_dict_map(value: Any, *, label: str, key_field: str, value_field: str) -> dict[str, Any] | None:
    """The map an emitted entry list stands for, or ``None`` when ``value`` is not such a list.

    Every item must be an object with a string (or integer) key under ``key_field``, and no key
    may repeat: anything else is returned as ``None`` so the caller keeps the model's output as
    it was rather than guessing which entry wins. For ``DICT_MAP_VALUE`` an entry of exactly
    ``{key, value}`` carries its value whole; any other entry (a union value whose branches
    were flattened beside the key) keeps its remaining fields.
    """
    if not isinstance(value, list):
        return None
    result: dict[str, Any] = {}
    for item in value:
        if not isinstance(item, dict) or key_field not in item:
            return None
        key = item[key_field]
        if isinstance(key, bool) or not isinstance(key, (str, int)):
            return None
        key = str(key)
        if key in result:
            return None
        rest = {k: v for k, v in item.items() if k != key_field}
        if label == DICT_MAP_VALUE and set(rest) == {value_field}:
            result[key] = rest[value_field]
        else:
            result[key] = rest
    return result


def unwrap_value_wrappers(mapping: dict[str, Any], *, value_field: str) -> dict[str, Any]:
    """``{k: {value: X}}`` → ``{k: X}`` for every entry that is exactly a one-field value wrapper."""
    return {
        key: item[value_field] if isinstance(item, dict) and set(item) == {value_field} else item
        for key, item in mapping.items()
    }
