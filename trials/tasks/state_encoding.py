"""The one encoder from an environment's Python objects to the JSON-safe state graders compare.

Task environments hold whatever their authors wrote: graphs with back-references (a file
system's ``Directory.parent``), dicts keyed by ints, sets, tuples, dataclasses, enums, pydantic
models. Everything is encoded deterministically (same objects, same state) by these rules:

- ``None``, ``bool``, ``int``, ``str`` as they are; a finite ``float`` as it is, a non-finite one
  as ``{"$float": "nan" | "inf" | "-inf"}`` (JSON has no such number);
- a list or tuple: a list;
- a set or frozenset: a list, sorted by the items' own order when they have one, else by the
  canonical JSON of their encodings;
- a dict: a mapping with its keys sorted. A ``str`` key stays as it is; an ``int``, ``float``,
  ``bool`` or ``None`` key becomes its JSON text (``1`` -> ``"1"``, ``True`` -> ``"true"``, as
  ``json.dumps`` writes it), an enum key its value's text, any other hashable key the canonical
  JSON of its encoding. When two keys would become the same text (``{1: .., "1": ..}``), the
  dict is ``{"$pairs": [[key, value], ...]}`` instead, with the keys encoded as values, so nothing
  is lost;
- an enum: its value, encoded; a dataclass: ``{field: value}`` of its fields; a pydantic model:
  its ``model_dump()``; ``datetime``/``date``/``time``: ISO text; ``Decimal``, ``UUID``, paths:
  their text;
- any other object with a ``__dict__``: ``{attr: value}`` of its public attributes (names not
  starting with ``_``);
- an object met again inside itself (a cycle) is ``{"$ref": "<path of its first occurrence>"}``,
  the path starting at the attribute (``root.contents['docs']``): a back-reference is recorded,
  never recursed into.

Anything else (a function, a lock, a file handle, bytes, an object with neither ``__dict__`` nor
a rule above), and a state nested deeper than :data:`MAX_DEPTH` or larger than
:data:`MAX_NODES`, is a :class:`StateEncodingError` naming the component, the attribute and the
path inside it.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import json
import math
import uuid
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

#: deepest nesting encoded; a state deeper than this is almost certainly a structure walked wrongly
MAX_DEPTH = 200
#: most values one state may hold (shared sub-objects count each time they are reached)
MAX_NODES = 2_000_000


class StateEncodingError(Exception):
    """A part of an environment's state that cannot be encoded, located by component, attribute and path."""

    def __init__(self, component: str | None, attribute: str | None, path: str, problem: str) -> None:
        self.component = component
        self.attribute = attribute
        self.path = path
        self.problem = problem
        where = []
        if component is not None:
            where.append(f"component {component!r}")
        if attribute is not None:
            where.append(f"attribute {attribute!r}")
        located = ", ".join(where) or "the state"
        inner = f" at {path}" if path else ""
        super().__init__(f"{located}{inner}: {problem}")


def encode_attributes(obj: Any, component: str | None) -> dict[str, Any]:
    """An object's public attributes (``vars``), each encoded; errors name ``component`` and the attribute."""
    try:
        attributes = vars(obj)
    except TypeError:
        raise StateEncodingError(component, None, "", f"a {type(obj).__name__} has no attributes to read as "
                                 "state; give the class a state() method returning plain data") from None
    out: dict[str, Any] = {}
    encoder = _Encoder(component)
    for name in sorted(k for k in attributes if isinstance(k, str) and not k.startswith("_")):
        out[name] = encoder.encode_root(attributes[name], name)
    return out


def encode_state_value(value: Any, component: str | None, attribute: str | None = None) -> Any:
    """One value (e.g. what a component's ``state()`` returned), encoded by the rules above."""
    return _Encoder(component).encode_root(value, attribute)


class _Encoder:
    def __init__(self, component: str | None) -> None:
        self.component = component
        self.attribute: str | None = None
        self.nodes = 0

    def encode_root(self, value: Any, attribute: str | None) -> Any:
        self.attribute = attribute
        try:
            return self._encode(value, [], {})
        except RecursionError:  # an object whose own hooks recurse; the depth bound keeps our walk shallower
            raise self._error([], "the value recurses too deeply to encode") from None

    def _error(self, path: list[str], problem: str) -> StateEncodingError:
        return StateEncodingError(self.component, self.attribute, "".join(path), problem)

    def _encode(self, value: Any, path: list[str], active: dict[int, str]) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise self._error(path, f"the state holds more than {MAX_NODES} values")
        if len(path) > MAX_DEPTH:
            raise self._error(path, f"the state is nested more than {MAX_DEPTH} levels deep")
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, enum.Enum):  # before int and str: IntEnum and StrEnum are both
            return self._encode(value.value, path, active)
        if isinstance(value, int):
            return int(value)
        if isinstance(value, float):
            return float(value) if math.isfinite(value) else {"$float": _nonfinite(value)}
        if isinstance(value, str):
            return str(value)
        if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
            return value.isoformat()
        if isinstance(value, (decimal.Decimal, uuid.UUID, PurePath)):
            return str(value)
        if isinstance(value, (bytes, bytearray, memoryview)):
            raise self._error(path, f"a {type(value).__name__} value cannot be compared as state; decode it to "
                              "text in a state() method")
        ident = id(value)
        if ident in active:  # a back-reference: name where the object first appeared, never recurse
            return {"$ref": active[ident]}
        active[ident] = (self.attribute or "") + "".join(path) or "(root)"
        try:
            return self._container(value, path, active)
        finally:
            del active[ident]

    def _container(self, value: Any, path: list[str], active: dict[int, str]) -> Any:
        if isinstance(value, Mapping):
            return self._mapping(value, path, active)
        if isinstance(value, (list, tuple)):
            return [self._child(item, path, f"[{i}]", active) for i, item in enumerate(value)]
        if isinstance(value, (set, frozenset)):
            return self._set(value, path, active)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: self._child(getattr(value, f.name), path, f".{f.name}", active)
                    for f in sorted(dataclasses.fields(value), key=lambda f: f.name)}
        dump = getattr(type(value), "model_dump", None)
        if dump is not None and hasattr(type(value), "model_fields"):  # a pydantic model
            try:
                dumped = value.model_dump()
            except Exception as exc:  # the model's own serialisers are the author's code
                raise self._error(path, f"model_dump() of a {type(value).__name__} raised "
                                  f"{type(exc).__name__}: {exc}") from None
            return self._encode(dumped, path, active)
        if callable(value) or isinstance(value, type):
            raise self._error(path, f"a {type(value).__name__} ({_short(value)}) is code, not state; keep it in an "
                              "attribute whose name starts with _")
        attributes = getattr(value, "__dict__", None)
        if isinstance(attributes, dict):
            return {k: self._child(attributes[k], path, f".{k}", active)
                    for k in sorted(k for k in attributes if isinstance(k, str) and not k.startswith("_"))}
        raise self._error(path, f"a {type(value).__name__} value cannot be encoded as state; give the component a "
                          "state() method returning plain data, or keep it in an attribute starting with _")

    def _child(self, value: Any, path: list[str], step: str, active: dict[int, str]) -> Any:
        path.append(step)
        try:
            return self._encode(value, path, active)
        finally:
            path.pop()

    def _mapping(self, value: Mapping[Any, Any], path: list[str], active: dict[int, str]) -> Any:
        items = list(value.items())
        texts: list[str] = []
        for key, _ in items:
            texts.append(key if isinstance(key, str) else self._key_text(key, path, active))
        if len(set(texts)) == len(texts):
            order = sorted(range(len(items)), key=lambda i: texts[i])
            return {texts[i]: self._child(items[i][1], path, f"[{texts[i]!r}]", active) for i in order}
        # keys that only differ by type ({1: .., "1": ..}): keep them apart, as pairs
        pairs = [[self._child(k, path, f"<key {texts[i]!r}>", active), self._child(v, path, f"[{texts[i]!r}]", active)]
                 for i, (k, v) in enumerate(items)]
        pairs.sort(key=lambda pair: _canonical(pair[0]))
        return {"$pairs": pairs}

    def _key_text(self, key: Any, path: list[str], active: dict[int, str]) -> str:
        if key is None or isinstance(key, (bool, int, float)) and not isinstance(key, enum.Enum):
            return json.dumps(key) if not isinstance(key, float) or math.isfinite(key) else _nonfinite(key)
        if isinstance(key, enum.Enum):
            inner = key.value
            return inner if isinstance(inner, str) else self._key_text(inner, path, active)
        return _canonical(self._child(key, path, f"<key {_short(key)}>", active))

    def _set(self, value: set[Any] | frozenset[Any], path: list[str], active: dict[int, str]) -> list[Any]:
        try:
            ordered = sorted(value)
        except TypeError:  # items of kinds that do not compare ('<' not supported): order by their encoding
            encoded = [self._child(item, path, "{…}", active) for item in value]
            return sorted(encoded, key=_canonical)
        return [self._child(item, path, f"{{{i}}}", active) for i, item in enumerate(ordered)]


def _nonfinite(value: float) -> str:
    return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _short(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:  # a broken __repr__ must not hide the real problem
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 60 else text[:57] + "..."
