"""Reading a YAML input fast: libyaml for the data and, when a diagnostic needs them, the positions.

The position-recording ruamel parse (:mod:`capplan.core.yaml_source`), ~25x slower than libyaml,
runs only when needed (task packs of 200 files, overlays of thousands of presets):

- the data comes from libyaml's event stream, built here into plain dicts, lists and scalars
  with YAML 1.2 core-schema scalars, exactly what the careful reader gives;
- anything where the two readers could differ or where the careful reader has a guard (an
  alias past the alias bounds or to a node that contains it, an explicit tag, a duplicate or
  non-scalar key, a merge key, a second document, deep nesting, a file that is not a mapping)
  hands the whole file to the careful reader, which reads it or reports the located error; a
  plain scalar that YAML 1.2 may read as a number, date or special value in a form not decoded
  here (``0x1f``, ``1_000``, ``2026-01-02``, ``2026.3.23``) is read by the careful reader alone,
  as ``x: <scalar>``;
- positions are computed the first time a diagnostic (or a provenance key path) asks for one,
  from libyaml's node marks, else by the careful reader: a file without problems never pays.

Tests hold that both readers give the same data and positions for the example task packs, the
bundled files and every scalar form above, and that every bad input reports the same errors.

Seam *libyaml fast reader*: 200 BFCL-sized task files load in 1.2 s of CPU instead of 17-23 s,
``capplan lint`` of a 200-task pack takes 0.55 s instead of 4.6 s (``benchmarks/task_loading.py``).
In the reference mode (:mod:`capplan.core.reference_mode`) :func:`fast_data` answers None, so
every file is read by the careful reader alone.
"""

from __future__ import annotations

import copy
import hashlib
import re
from pathlib import Path
from typing import Any

from capplan.core.diagnostics import InputError
from capplan.core.input_limits import (
    MAX_ALIAS_EXPANSION,
    MAX_ALIASES,
    MAX_CONFIG_BYTES,
    MAX_NESTING,
    MAX_NUMBER_CHARS,
    InputLimitError,
    read_limited,
)
from capplan.core.reference_mode import reference_mode, speed_memo
from capplan.core.yaml_import import import_yaml
from capplan.core.yaml_source import Loc, SourceFile, parse_with_libyaml, read_source, source_from_bytes

_NULL = frozenset({"", "~", "null", "Null", "NULL"})
_TRUE = frozenset({"true", "True", "TRUE"})
_FALSE = frozenset({"false", "False", "FALSE"})
_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_FLOAT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)\.[0-9]+(?:[eE][-+]?[0-9]+)?")
#: plain scalars YAML 1.2 may read as something other than a string (octal, hex, 1_000, .5, .inf,
#: dates, sexagesimal, the merge and value keys): the careful reader decides those
_DOUBT = re.compile(r"[-+]?\.?[0-9][0-9a-fA-FxXoObB_:.+\- \ttTzZ]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)|<<|=")


class _Doubt(Exception):
    """The file holds something only the careful reader reads exactly."""


class LazySource(SourceFile):
    """A parsed file whose positions are computed from its bytes on first use."""

    def __init__(self, display: str, sha256: str, data: Any, raw: bytes,
                 positions: dict[Loc, tuple[int, int]] | None = None) -> None:
        super().__init__(display, sha256, data, positions or {})
        self._raw = raw
        self._positioned = positions is not None

    def _positions(self) -> None:
        if self._positioned:
            return
        self._positioned = True
        # libyaml's node marks are the careful reader's positions (a test holds it for the bundled files and
        # the example tasks), at a tenth of the cost: a pack whose every file has a warning stays fast
        parsed = parse_with_libyaml(self._raw)
        if parsed is not None:
            self.positions = parsed[1]
            return
        try:
            self.positions = source_from_bytes(self._raw, self.display).positions
        except InputError:  # the fast reader read it, so this does not happen; a diagnostic then sits at 1:1
            self.positions = {(): (1, 1)}

    def position(self, loc: Any) -> tuple[int, int]:
        self._positions()
        return super().position(loc)

    def key_path(self, loc: Any) -> str:
        self._positions()
        return super().key_path(loc)

    def line_of(self, key_path: str) -> int | None:
        self._positions()
        return super().line_of(key_path)


def read_fast_source(path: Path, display: str | None = None, *, positioned: bool = False) -> SourceFile:
    """``path`` parsed; every problem is the careful reader's located :class:`InputError`.

    ``positioned``: record the positions while parsing (:func:`fast_positioned_source`)."""
    name = display or str(path)
    try:
        raw = read_limited(path, MAX_CONFIG_BYTES)
    except (OSError, InputLimitError):
        return read_source(path, name)  # raises the located error
    return fast_positioned_source(raw, name) if positioned else fast_source_from_bytes(raw, name)


def fast_source_from_bytes(raw: bytes, name: str) -> SourceFile:
    """Content already in memory (a task carried in a trial spec), parsed the same way."""
    data = fast_data(raw)
    if not isinstance(data, dict):
        return source_from_bytes(raw, name)  # the careful reader reads it, or says what is wrong
    return LazySource(name, hashlib.sha256(raw).hexdigest(), data, raw)


def fast_positioned_source(raw: bytes, name: str) -> SourceFile:
    """The same, with the positions recorded while the data is built (an event's mark costs little
    beside a second parse): for files whose every key is located anyway, as the compiler's provenance
    locates every field it takes from an overlay. A file with an alias gets its positions on first use,
    as :func:`fast_source_from_bytes` does (an alias's copy is located where its anchor is)."""
    positions: dict[Loc, tuple[int, int]] = {(): (1, 1)}
    data = fast_data(raw, positions)
    if not isinstance(data, dict):
        return source_from_bytes(raw, name)  # the careful reader reads it, or says what is wrong
    return LazySource(name, hashlib.sha256(raw).hexdigest(), data, raw,
                      None if _ALIASED in positions else positions)


def fast_data(raw: bytes, positions: dict[Loc, tuple[int, int]] | None = None) -> Any:
    """The document's data by libyaml, or None when the careful reader must read it (see the module doc).

    With ``positions``, every key's and item's 1-based (line, column) is recorded in it, keyed by the
    data's own keys; an alias in the document marks it with the ``_ALIASED`` key instead.
    None in the reference mode: the careful reader reads every file there.
    """
    if reference_mode():
        return None
    try:
        yaml = import_yaml()
    except ImportError:
        return None
    loader_cls = getattr(yaml, "CSafeLoader", None)
    if loader_cls is None or b"\x00" in raw:
        return None
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    loader = loader_cls(raw)
    try:
        return _build(loader, yaml, positions)
    except (_Doubt, yaml.YAMLError, RecursionError, ValueError):  # ValueError: e.g. an int past Python's digit limit
        return None
    finally:
        loader.dispose()


_NO_KEY = object()

#: the key :func:`fast_data` sets in ``positions`` when the document has an alias
_ALIASED: Loc = ("<alias>", -1)


def _build(loader: Any, yaml: Any, positions: dict[Loc, tuple[int, int]] | None = None) -> Any:
    """Plain data from the event stream: one document, no tags, unique scalar keys.

    An alias becomes a copy of its anchor's value, within the careful reader's alias bounds
    (uses, and the size of what they expand to); past them, or for an alias to a node still
    open (a recursive one), the careful reader reads the file and says what is wrong.
    """
    scalar_event, alias_event = yaml.ScalarEvent, yaml.AliasEvent
    map_start, seq_start = yaml.MappingStartEvent, yaml.SequenceStartEvent
    map_end, seq_end = yaml.MappingEndEvent, yaml.SequenceEndEvent
    doc_start, stream_end = yaml.DocumentStartEvent, yaml.StreamEndEvent
    # the open containers: [container, the key awaiting its value (or _NO_KEY), is_mapping, anchor, loc]
    stack: list[list[Any]] = []
    anchors: dict[str, tuple[Any, int]] = {}
    aliases = expanded = 0
    root: Any = None
    documents = 0
    while True:
        event = loader.get_event()
        kind = type(event)
        if kind is scalar_event:
            if event.tag is not None:
                raise _Doubt
            value: Any = _scalar(event.value) if not event.style else event.value  # plain: style ""
            if event.anchor is not None:
                anchors[event.anchor] = (value, 1 + len(event.value) // 64)
        elif kind is map_start or kind is seq_start:
            if event.tag is not None or len(stack) >= MAX_NESTING:
                raise _Doubt
            container: Any = {} if kind is map_start else []
            loc: Loc = ()
            if stack:
                top = stack[-1]
                if positions is not None:
                    loc = _locate(top, event, positions)
                _add(top, container, is_scalar=False)
            else:
                root = container
            stack.append([container, _NO_KEY, kind is map_start, event.anchor, loc])
            continue
        elif kind is map_end or kind is seq_end:
            closed = stack.pop()
            if closed[3] is not None:
                anchors[closed[3]] = (closed[0], _size(closed[0]))
            continue
        elif kind is alias_event:
            found = anchors.get(event.anchor)
            aliases += 1
            if found is None or aliases > MAX_ALIASES:
                raise _Doubt  # an alias to an open node or an unknown anchor, or too many
            expanded += found[1]
            if expanded > MAX_ALIAS_EXPANSION:
                raise _Doubt
            value = copy.deepcopy(found[0])
            if positions is not None:
                positions[_ALIASED] = (0, 0)
                positions = None
            if stack:
                _add(stack[-1], value, is_scalar=not isinstance(value, (dict, list)))
            else:
                root = value
            continue
        elif kind is doc_start:
            documents += 1
            if documents > 1:
                raise _Doubt
            continue
        elif kind is stream_end:
            return root
        else:  # stream start, document end
            continue
        if stack:
            if positions is not None:
                _locate(stack[-1], event, positions, value)
            _add(stack[-1], value, is_scalar=True)
        else:
            root = value


def _locate(top: list[Any], event: Any, positions: dict[Loc, tuple[int, int]], scalar: Any = _NO_KEY) -> Loc:
    """Record where the node ``event`` starts, when it is a key or an item of ``top``; its loc.

    ``scalar`` is the node's value when it is a scalar. The careful reader locates keys and
    items, not a key's value; libyaml's marks are 0-based.
    """
    container, key, is_mapping = top[0], top[1], top[2]
    loc: Loc = top[4]
    if is_mapping:
        if key is _NO_KEY:  # a key: a container here is a doubt _add raises
            if scalar is not _NO_KEY:
                mark = event.start_mark
                positions[(*loc, scalar)] = (mark.line + 1, mark.column + 1)
            return loc
        return (*loc, key)
    here = (*loc, len(container))
    mark = event.start_mark
    positions[here] = (mark.line + 1, mark.column + 1)
    return here


def _size(value: Any) -> int:
    """Nodes ``value`` stands for, as the careful reader counts an alias's expansion (a string: one per 64 chars)."""
    if isinstance(value, str):
        return 1 + len(value) // 64
    if isinstance(value, dict):
        return 1 + sum(_size(v) for v in value.values())
    if isinstance(value, list):
        return 1 + sum(_size(v) for v in value)
    return 1



def _add(top: list[Any], value: Any, *, is_scalar: bool) -> None:
    container, key, is_mapping = top[0], top[1], top[2]
    if not is_mapping:
        container.append(value)
        return
    if key is _NO_KEY:
        if not is_scalar or value in container or value == "<<":
            raise _Doubt  # a complex key, a duplicate (the careful reader names it), a merge
        try:
            hash(value)
        except TypeError:
            raise _Doubt from None
        top[1] = value
        return
    container[key] = value
    top[1] = _NO_KEY


def _scalar(text: str) -> Any:
    """A plain scalar under YAML 1.2's core schema (the careful reader's), or :class:`_Doubt`."""
    if text in _NULL:
        return None
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    if len(text) <= MAX_NUMBER_CHARS:  # a longer number is the careful reader's to judge
        if _INT.fullmatch(text):
            return int(text)
        if _FLOAT.fullmatch(text):
            return float(text)
    if _DOUBT.fullmatch(text):
        return _careful_scalar(text)
    return text


@speed_memo(maxsize=4096)  # a pack repeats its version strings and dates; the careful reader's answer is the same
def _careful_scalar(text: str) -> Any:
    """What the careful reader makes of one plain scalar (a version ``2026.3.23``, a date, ``0x1f``): it reads
    ``x: <text>`` itself, so the two readers cannot disagree; :class:`_Doubt` when that is not one scalar."""
    try:
        data = source_from_bytes(b"x: " + text.encode("utf-8"), "<scalar>").data
    except InputError:
        raise _Doubt from None
    if not isinstance(data, dict) or list(data) != ["x"] or isinstance(data["x"], (dict, list)):
        raise _Doubt
    return data["x"]


__all__ = ["LazySource", "Loc", "fast_data", "fast_positioned_source", "fast_source_from_bytes", "read_fast_source"]
