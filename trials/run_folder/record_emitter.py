"""A trial record's YAML written straight from plain data, the bytes libyaml's emitter would write.

``dump_records_yaml`` used to build a PyYAML node for every value and hand the tree to libyaml,
which calls back into Python twice per scalar to resolve its tag: about 1.3 ms of CPU for a
six-turn trial's two files, most of it per-node Python that produces nothing. A record is plain
data (``dict`` with ``str`` keys, ``list``, ``str``, ``int``, ``float``, ``bool``, ``None``) written
in block style, so the layout is fixed and only a scalar's style needs choosing. This module
writes that layout directly, choosing each scalar's style and folding long lines by libyaml's
rules (``yaml_emitter_analyze_scalar``, ``yaml_emitter_select_scalar_style`` and the plain,
single- and double-quoted writers of libyaml's ``emitter.c``, with ``allow_unicode`` and a width
of 120): ``benchmarks/record_yaml.py`` measures 0.14x the CPU of the node path for the trial-loop
benchmark's trial, 0.46x for a mixed trajectory and 0.88x for a long-text one here.

It answers None (the caller then uses PyYAML, as before) for anything outside that: a value of
another type or a subclass, a key that is not a ``str`` or that libyaml would write as a complex
(``? ``) key, a container met twice (PyYAML writes an alias), a string with a lone surrogate,
nesting deeper than :data:`MAX_DEPTH`, and more text than :data:`MAX_TEXT`. ``tests/trials/test_record_emitter.py`` compares its
output with ``yaml.dump(..., Dumper=CSafeDumper)`` on generated and edge-case documents.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.nodes import ScalarNode

from capplan.core.reference_mode import speed_memo

#: libyaml folds a plain or quoted scalar at a space once its line is longer than this (``width=120``)
WIDTH = 120
#: deeper documents go through PyYAML (records are a few levels deep; this bounds the recursion)
MAX_DEPTH = 64
#: a document whose strings hold more characters than this goes through PyYAML: past a few hundred KiB the
#: C emitter is as fast on ordinary text, and much faster on text built to make Python work per character
#: (a long run of double spaces, emoji, control characters): this bounds what such text costs here
MAX_TEXT = 256 << 10
#: libyaml writes a key after ``? `` when its UTF-8 is longer than this
_SIMPLE_KEY_BYTES = 128
#: scalars up to this length have their rendering remembered (keys, roles, enums, ids repeat)
_MEMO_LEN = 64
_MEMO_SIZE = 8192

_STR = "tag:yaml.org,2002:str"
_FLOAT = "tag:yaml.org,2002:float"
#: the characters of these constants go into regular expressions' classes, escaped for the regex engine
_BREAKS = r"\n\r\x85\u2028\u2029"
_BLANKZ = r" \t\x00" + _BREAKS
#: a space or a line break, as characters: neither may start or end a plain scalar
_EDGES = " \n\r\x85\u2028\u2029"
#: outside libyaml's printable set (tab, CR, NEL, C0/C1 controls, DEL, surrogates, BOM, U+FFFE/F,
#: everything beyond the BMP): the scalar can only be double-quoted
_SPECIAL = re.compile(r"[^\n\x20-\x7e\xa0-\ud7ff\ue000-\ufefe\uff00-\ufffd]")
_LINE_BREAK = re.compile(f"[{_BREAKS}]")
#: a space next to a line or paragraph separator (CR and NEL are special already)
_SPACE_AT_SEPARATOR = re.compile(r" [\u2028\u2029]|[\u2028\u2029] ")
#: what makes a plain scalar unreadable in block context (libyaml's ``block_indicators``)
_BLOCK_INDICATOR = re.compile(
    "\\A(?:---|\\.\\.\\.|[#,\\[\\]{}&*!|>'\"%@`]|[?-](?:[" + _BLANKZ + "]|\\Z))"
    "|:(?:[" + _BLANKZ + "]|\\Z)|[" + _BLANKZ + "]#")
#: what a double-quoted scalar escapes: the non-printable, line breaks, ``"`` and ``\``
_DOUBLE_ESCAPED = re.compile(r"[^\x20\x21\x23-\x5b\x5d-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd]")
_SHORT_ESCAPES = {0x00: "0", 0x07: "a", 0x08: "b", 0x09: "t", 0x0A: "n", 0x0B: "v", 0x0C: "f", 0x0D: "r",
                  0x1B: "e", 0x22: '"', 0x5C: "\\", 0x85: "N", 0xA0: "_", 0x2028: "L", 0x2029: "P"}
#: beyond the basic plane (every such character is escaped) or a lone surrogate (PyYAML cannot encode it)
_WIDE_OR_SURROGATE = re.compile(r"([\ud800-\udfff\U00010000-\U0010ffff])")
#: the line breaks a single-quoted scalar may hold (the others are not printable: double-quoted), in runs
_BREAK_RUN = re.compile(r"([\n\u2028\u2029]+)")
_SPACES = re.compile(" +")

_PLAIN, _SINGLE, _DOUBLE = "", "'", '"'


class _Declined(Exception):
    """The document holds something this writer leaves to PyYAML."""


class _Walk:
    """One document's walk: the containers met (a second meeting is an alias) and the text still allowed."""

    __slots__ = ("seen", "text_left")

    def __init__(self, max_text: int) -> None:
        self.seen: set[int] = set()
        self.text_left = max_text

    def enter(self, container: object, depth: int) -> None:
        if depth > MAX_DEPTH or id(container) in self.seen:
            raise _Declined
        self.seen.add(id(container))

    def take(self, text: str) -> str:
        self.text_left -= len(text)
        if self.text_left < 0:
            raise _Declined
        return text


def emit_records_yaml(data: Any, max_text: int = MAX_TEXT) -> str | None:
    """``data`` (a ``dict``) as ``yaml.dump(data, Dumper=CSafeDumper, sort_keys=False, allow_unicode=True,
    width=120)`` writes it, or None where that takes PyYAML (see the module's docstring).

    ``max_text``: None, too, for a document whose strings hold more characters than this (at most
    :data:`MAX_TEXT`; the render helper sends longer ones to its own process); the walk stops there."""
    if type(data) is not dict:
        return None
    if not data:
        return "{}\n"
    out: list[str] = []
    try:
        _mapping(data, 0, "", out, _Walk(min(max_text, MAX_TEXT)), 0)
    except _Declined:
        return None
    out.append("\n")
    return "".join(out)


def _mapping(data: dict[Any, Any], indent: int, lead: str, out: list[str], walk: _Walk, depth: int) -> None:
    """A non-empty block mapping whose keys start at ``indent``; ``lead`` goes before the first key."""
    walk.enter(data, depth)
    newline = "\n" + " " * indent
    inner = indent + 2
    for key, value in data.items():
        if type(key) is not str:
            raise _Declined
        text = _KEYS.get(key)
        if text is None:
            text = _key_text(key)
        out.append(lead)
        out.append(text)
        lead = newline
        kind = type(value)
        if kind is str:
            out.append(_scalar(walk.take(value), indent + len(text), inner))
        elif kind is dict:
            if value:
                _mapping(value, inner, "\n" + " " * inner, out, walk, depth + 1)
            else:
                out.append(" {}")
        elif kind is list:
            if value:
                _sequence(value, indent, newline, out, walk, depth + 1)  # libyaml does not indent it
            else:
                out.append(" []")
        else:
            out.append(_other_scalar(value, kind))


def _sequence(data: list[Any], indent: int, lead: str, out: list[str], walk: _Walk, depth: int) -> None:
    """A non-empty block sequence whose dashes are at ``indent``; ``lead`` goes before the first dash."""
    walk.enter(data, depth)
    newline = "\n" + " " * indent
    inner = indent + 2
    for item in data:
        out.append(lead)
        out.append("-")
        lead = newline
        kind = type(item)
        if kind is str:
            out.append(_scalar(walk.take(item), indent + 1, inner))
        elif kind is dict:
            if item:
                _mapping(item, inner, " ", out, walk, depth + 1)
            else:
                out.append(" {}")
        elif kind is list:
            if item:
                _sequence(item, inner, " ", out, walk, depth + 1)
            else:
                out.append(" []")
        else:
            out.append(_other_scalar(item, kind))


def _other_scalar(value: Any, kind: type) -> str:
    """A value that is not a ``str``, with its leading space."""
    if kind is bool:
        return " true" if value else " false"
    if kind is int:
        return " " + str(value)
    if value is None:
        return " null"
    if kind is float:
        text = _float_text(value)
        if text is not None:
            return " " + text
    raise _Declined


def _float_text(value: float) -> str | None:
    """PyYAML's spelling of a float (``.nan``, ``.inf``, ``-.inf``; else its ``repr``, always lower case, with
    ``.0`` put before an exponent that has no dot), or None where that text would not read back as a float."""
    if value != value:
        text = ".nan"
    elif value == _INF:
        text = ".inf"
    elif value == -_INF:
        text = "-.inf"
    else:
        text = repr(value)
        if "." not in text and "e" in text:
            text = text.replace("e", ".0e", 1)
    # every such text starts with a sign, a digit or a dot, where the float resolver is the one tried first
    return text if _FLOAT_TEXT.match(text) else None


def _scalar(value: str, column: int, indent: int) -> str:
    """A string value as written after ``column`` characters of its line (a key's colon or a dash), with
    its leading space; ``indent``: where a folded line goes on."""
    if len(value) <= _MEMO_LEN:
        text = _VALUES.get(value)
        if text is None:
            text = _short_value(value)
        # no fold can happen when the whole line fits: a space folds only past WIDTH columns
        if text and column + len(text) <= WIDTH:
            return " " + text
    style = _style(value)
    if style is _PLAIN:
        return _plain(value, column, indent)
    if style is _SINGLE:
        return _single_quoted(value, column, indent)
    return _double_quoted(value, column, indent)


def _short_value(value: str) -> str:
    """A short value's text as written on one line ('' for a value with line breaks), remembered."""
    if _LINE_BREAK.search(value):
        text = ""
    else:
        style = _style(value)
        text = value if style is _PLAIN else _unfolded(value, style)
    if len(_VALUES) >= _MEMO_SIZE:
        _VALUES.clear()
    _VALUES[value] = text
    return text


def _key_text(key: str) -> str:
    """A key as written before its value, colon included, remembered; a key libyaml would write as a
    complex key (multi-line, or longer than 128 UTF-8 bytes) is declined."""
    if _LINE_BREAK.search(key) or (len(key) * 4 > _SIMPLE_KEY_BYTES
                                   and len(key.encode("utf-8", "surrogatepass")) > _SIMPLE_KEY_BYTES):
        raise _Declined
    text = _unfolded(key, _style(key)) + ":"
    if len(_KEYS) >= _MEMO_SIZE:
        _KEYS.clear()
    _KEYS[key] = text
    return text


def _unfolded(value: str, style: str) -> str:
    """A single-line scalar in ``style``, never folded (a key, or a value short enough to fit)."""
    if style is _PLAIN:
        return value
    if style is _SINGLE:
        return "'" + value.replace("'", "''") + "'"
    return '"' + _escaped(value) + '"'


def _style(value: str) -> str:
    """libyaml's choice for a ``str`` scalar in block context: plain where it can be read back as the same
    string, else single-quoted where that can hold it, else double-quoted."""
    if not value:
        return _SINGLE  # empty: the plain form is null
    single_ok = _single_ok(value)
    if (single_ok and value[0] not in _EDGES and value[-1] not in _EDGES and _LINE_BREAK.search(value) is None
            and _BLOCK_INDICATOR.search(value) is None and _reads_as_str(value)):
        return _PLAIN
    return _SINGLE if single_ok else _DOUBLE


def _single_ok(value: str) -> bool:
    """Whether single quotes can hold ``value``: nothing special, and no space next to a line break (one
    pass of a character class and two substring searches: a long message's text is scanned a few times)."""
    if _SPECIAL.search(value) is not None or " \n" in value or "\n " in value:
        return False
    return not (("\u2028" in value or "\u2029" in value) and _SPACE_AT_SEPARATOR.search(value))


def _reads_as_str(value: str) -> bool:
    """Whether ``value`` written plain reads back as a string (not a number, bool, null, date, merge key...)."""
    resolvers = yaml.SafeDumper.yaml_implicit_resolvers
    if value[:1] not in resolvers and None not in resolvers:
        return True
    return _resolve(value) == _STR


@speed_memo(maxsize=8192)  # the resolver is a pure function of the text
def _resolve(value: str) -> str:
    tag: str = _RESOLVER.resolve(ScalarNode, value, (True, False))
    return tag


def _plain(value: str, column: int, indent: int) -> str:
    """A plain scalar (no line breaks, no leading or trailing space) after ``column`` characters, its space included."""
    return " " + _folded(value, column + 1, indent, double=False)


def _single_quoted(value: str, column: int, indent: int) -> str:
    """A single-quoted scalar: ``'`` doubled, a run of line breaks written after one more line break when it
    starts with one, each line after a break indented, long lines folded."""
    text = value.replace("'", "''")
    column += 2
    if "\u2028" in text or "\u2029" in text:
        return " '" + _separated_lines(text, column, indent) + "'"
    lines = text.split("\n")  # a run of k line feeds leaves k - 1 empty lines between two texts
    first = lines[0]
    out = [" '", first if column + len(first) <= WIDTH else _folded(first, column, indent, double=False)]
    pad = " " * indent
    last = len(lines) - 1
    breaks = 0
    for index in range(1, last + 1):
        line = lines[index]
        breaks += 1
        if not line and index < last:
            continue  # another line feed follows
        # a run of line feeds is written with one more, and the next line (or the closing quote) is indented
        out.append("\n" * (breaks + 1) + pad)
        breaks = 0
        if line:
            out.append(line if indent + len(line) <= WIDTH else _folded(line, indent, indent, double=False))
    out.append("'")
    return "".join(out)


def _separated_lines(text: str, column: int, indent: int) -> str:
    """:func:`_single_quoted`'s body where a line or paragraph separator breaks lines too: written as it is,
    a run of breaks after one more line feed only when it starts with one."""
    out = []
    pad = " " * indent
    for index, part in enumerate(_BREAK_RUN.split(text)):  # text, then a run of breaks, then text...
        if index % 2:
            out.append("\n" + part if part[0] == "\n" else part)
            continue
        if index:
            out.append(pad)  # every line after a break starts at the indent, the last one (before ') too
            column = indent
        if part:
            out.append(_folded(part, column, indent, double=False))
    return "".join(out)


def _double_quoted(value: str, column: int, indent: int) -> str:
    """A double-quoted scalar: escapes, long lines folded (a ``\\`` keeps a space that starts the next line)."""
    return ' "' + _folded(_escaped(value), column + 2, indent, double=True) + '"'


def _folded(text: str, column: int, indent: int, *, double: bool) -> str:
    """``text`` (one line as written, its first character at ``column``) folded as libyaml folds it: at a space
    past WIDTH that follows no space and is not the first character; plain and single-quoted also want no
    space after it and a character after it, double-quoted only that it is not the last character."""
    end = len(text)
    # the first index a fold may happen at: the one whose column is past WIDTH
    candidate = max(WIDTH - column + 1, 1)
    if candidate >= end:
        return text
    pieces: list[str] = []
    start = 0
    newline = "\n" + " " * indent
    while True:
        at = text.find(" ", candidate)
        if at < 0:
            break
        if text[at - 1] == " ":  # within a run of spaces, only its first may fold: the run is skipped at once
            candidate = _SPACES.match(text, at).end()  # type: ignore[union-attr]
            continue
        following = at + 1 < end and text[at + 1] == " "
        if double:
            folds = at != end - 1
        else:
            folds = at + 1 < end and not following
        if not folds:
            # later spaces are further past WIDTH: the next one after this run is the next candidate
            candidate = _SPACES.match(text, at).end() if following else at + 1  # type: ignore[union-attr]
            continue
        pieces.append(text[start:at])
        pieces.append(newline)
        line_column = indent
        if double and following:
            pieces.append("\\")  # the space after the fold would be read as folding: escaped
            line_column += 1
        start = at + 1
        candidate = start + max(WIDTH - line_column + 1, 1)
        if candidate >= end:
            break
    pieces.append(text[start:])
    return "".join(pieces)


def _escaped(value: str) -> str:
    """``value``'s double-quoted text: each escaped character in the basic plane through one table (a
    hostile text of control characters costs what a translation costs), the rest one by one."""
    text = value.translate(_BASIC_ESCAPES)
    if _WIDE_OR_SURROGATE.search(text) is None:
        return text
    parts = _WIDE_OR_SURROGATE.split(text)  # text, a character to escape, text...
    parts[1::2] = [_WIDE_ESCAPES.get(char) or _wide_escape(char) for char in parts[1::2]]
    return "".join(parts)


def _wide_escape(char: str) -> str:
    escape = _escape_code(ord(char))
    if len(_WIDE_ESCAPES) < _MEMO_SIZE:
        _WIDE_ESCAPES[char] = escape
    return escape


def _escape_code(code: int) -> str:
    short = _SHORT_ESCAPES.get(code)
    if short is not None:
        return "\\" + short
    if 0xD800 <= code <= 0xDFFF:
        raise _Declined  # libyaml never sees one: PyYAML fails to encode it, and so does the fallback path
    if code <= 0xFF:
        return f"\\x{code:02X}"
    if code <= 0xFFFF:
        return f"\\u{code:04X}"
    return f"\\U{code:08X}"


#: one instance answers every resolution: it depends on the class's tables only
_RESOLVER = yaml.SafeDumper(None)
_INF = float("inf")
#: the safe resolver's float pattern, read from its table, and proof that it decides before any other
#: resolver for every character a float's text can start with
_FLOAT_TEXT = next(regexp for tag, regexp in yaml.SafeDumper.yaml_implicit_resolvers["1"] if tag == _FLOAT)
assert None not in yaml.SafeDumper.yaml_implicit_resolvers and all(
    yaml.SafeDumper.yaml_implicit_resolvers[first][0] == (_FLOAT, _FLOAT_TEXT) for first in "-+.0123456789")
#: every character of the basic plane a double-quoted scalar escapes (surrogates apart: declined), and its
#: escape: C0 controls, ``"``, ``\``, DEL and C1 controls, the line and paragraph separators, the BOM, U+FFFE/F
#: (the complement of ``_DOUBLE_ESCAPED``'s class; a test compares them)
_BASIC_ESCAPES = {code: _escape_code(code) for code in (*range(0x20), 0x22, 0x5C, *range(0x7F, 0xA0), 0x2028, 0x2029,
                                                        0xFEFF, 0xFFFE, 0xFFFF)}
_KEYS: dict[str, str] = {}
_VALUES: dict[str, str] = {}
_WIDE_ESCAPES: dict[str, str] = {}
