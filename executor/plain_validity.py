"""A quick yes for tool arguments that plainly match a plain schema; jsonschema for everything else.

Seam *plain validity* (``benchmarks/transport.py``, ``benchmarks/trial_loop.py``): every tool call
an answer carries is held to the schema the model was shown (``response_parser._violations``), and
jsonschema's ``iter_errors`` walks the arguments through its keyword functions, its type checker and a
generator per level: about a tenth of ``Client.generate``'s CPU on the direct transport for one
call with a two-field object. Almost every call is valid, and almost every tool schema uses a few
keywords.

:func:`quick_check` compiles a schema built of those keywords into a function that answers True
only when the arguments certainly satisfy it under Draft 2020-12, as jsonschema reads it without
a format checker: ``type`` (one name or a list), ``properties``, ``required``,
``additionalProperties`` (true, false or a schema), ``items`` (one schema), ``enum`` of strings, and
the annotations (``description``, ``title``, ``default``, ``examples``, ``format``, ``$comment``).
A schema with any other keyword, or with ``$schema`` (another draft may read it otherwise), gets
None: jsonschema checks every call against it. Where the function answers False, jsonschema is asked
and words the violations, so the only thing the shortcut ever decides is "no violations", and only
where it holds for certain; ``tests/executor/test_plain_validity.py`` compares it with jsonschema on
varied and hostile arguments. The reference mode never compiles one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from capplan.core.reference_mode import reference_mode

Check = Callable[[Any], bool]

#: keywords that never make an instance invalid (no format checker is given to the validators)
_ANNOTATIONS = frozenset({"description", "title", "default", "examples", "format", "$comment", "deprecated",
                          "readOnly", "writeOnly"})
_KNOWN = _ANNOTATIONS | {"type", "properties", "required", "additionalProperties", "items", "enum"}
#: nesting deeper than this is left to jsonschema (a compiled check recurses as deep as the schema)
_MAX_DEPTH = 32


def _is_integer(value: Any) -> bool:
    kind = type(value)
    return kind is int or (kind is float and value.is_integer())


#: each type name's test, for values as json.loads makes them (exact types: anything else is left to jsonschema)
_TYPES: dict[str, Check] = {
    "object": lambda v: type(v) is dict,
    "array": lambda v: type(v) is list,
    "string": lambda v: type(v) is str,
    "integer": _is_integer,
    "number": lambda v: type(v) is int or type(v) is float,
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
}


def quick_check(schema: Any) -> Check | None:
    """A function True only for instances ``schema`` certainly accepts; None for a schema it does not model."""
    if reference_mode() or not isinstance(schema, Mapping) or "$schema" in schema:
        return None
    return _compile(schema, 0)


def _compile(schema: Any, depth: int) -> Check | None:
    if schema is True:
        return _always
    if type(schema) is not dict or depth > _MAX_DEPTH or not schema.keys() <= _KNOWN:
        return None
    checks: list[Check] = []
    if "type" in schema:
        typed = _type_check(schema["type"])
        if typed is None:
            return None
        checks.append(typed)
    if "enum" in schema:
        allowed = schema["enum"]
        if type(allowed) is not list or not allowed or any(type(item) is not str for item in allowed):
            return None
        names = frozenset(allowed)
        checks.append(lambda v: type(v) is str and v in names)
    object_check = _object_check(schema, depth)
    if object_check is None:
        return None
    if object_check is not _always:
        checks.append(object_check)
    if "items" in schema:
        item = _compile(schema["items"], depth + 1)
        if item is None:
            return None
        checks.append(lambda v: type(v) is not list or all(item(x) for x in v))
    return _all_of(checks)


def _type_check(named: Any) -> Check | None:
    names = [named] if type(named) is str else named
    if type(names) is not list or not names or any(type(n) is not str or n not in _TYPES for n in names):
        return None
    tests = [_TYPES[n] for n in names]
    if len(tests) == 1:
        return tests[0]
    return lambda v: any(test(v) for test in tests)


def _object_check(schema: dict[str, Any], depth: int) -> Check | None:
    """The object keywords' check (applied to dicts only, as the keywords apply to objects only)."""
    if not schema.keys() & {"properties", "required", "additionalProperties"}:
        return _always
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    if type(properties) is not dict or type(required) is not list or any(type(r) is not str for r in required):
        return None
    compiled: dict[str, Check] = {}
    for name, sub in properties.items():
        property_check = _compile(sub, depth + 1)
        if property_check is None:
            return None
        compiled[name] = property_check
    extra = schema.get("additionalProperties", True)
    extra_check = _compile(extra, depth + 1) if extra is not False else None
    if extra is not False and extra_check is None:
        return None
    needed = tuple(required)

    def check_object(value: Any) -> bool:
        if type(value) is not dict:
            return True
        for name in needed:
            if name not in value:
                return False
        for key, item in value.items():
            sub = compiled.get(key)
            if sub is not None:
                if not sub(item):
                    return False
            elif extra_check is None or not extra_check(item):
                return False
        return True

    return check_object


def _always(value: Any) -> bool:
    return True


def _all_of(checks: list[Check]) -> Check:
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]
    return lambda v: all(check(v) for check in checks)


class QuickValidator:
    """A jsonschema validator whose ``iter_errors`` yields nothing at once where :func:`quick_check` says so."""

    def __init__(self, validator: Any, check: Check | None) -> None:
        self.validator = validator
        self._check = check

    def iter_errors(self, instance: Any) -> Iterator[Any]:
        check = self._check
        if check is not None:
            try:
                if check(instance):
                    return iter(())
            except RecursionError:
                pass  # an instance nested past the stack: jsonschema says what it says of it
        return iter(self.validator.iter_errors(instance))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.validator, name)
