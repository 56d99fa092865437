"""JSON exactly as RFC 8259 has it, for files capplan does not trust (plans, request files, pricing).

Python's ``json`` accepts what other readers refuse or read differently: ``NaN`` and
``Infinity``, duplicate keys (the last silently wins), lone UTF-16 surrogates (which fail only
later, when the text is encoded), nesting deep enough to exhaust the stack, a number too large
for a double (``1e400`` reads as infinity) and an integer longer than the interpreter converts
(a ``ValueError`` from deep inside the decoder). Each of these is refused here with the line and
column it sits at.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from capplan.core.input_limits import MAX_NESTING, MAX_NUMBER_CHARS, InputLimitError, check_flow_nesting


class StrictJSONError(ValueError):
    """Text that is not strict JSON; ``code``, ``line`` and ``col`` (1-based) locate the problem."""

    def __init__(self, code: str, message: str, line: int = 1, col: int = 1) -> None:
        self.code, self.line, self.col = code, line, col
        super().__init__(message)


# a \uXXXX escape of a UTF-16 surrogate, not itself escaped (an even run of backslashes before it)
_SURROGATE = re.compile(r"(?<!\\)(?:\\\\)*(\\u[dD]([89abAB]|[c-fC-F])[0-9a-fA-F]{2})")


def loads_strict(text: str, *, max_nesting: int = MAX_NESTING) -> Any:
    """Parse ``text``; raises :class:`StrictJSONError` (or :class:`InputLimitError` for depth)."""
    check_flow_nesting(text, max_nesting)
    _check_surrogates(text)
    duplicates: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(items)
        if len(out) != len(items):
            seen: set[str] = set()
            for key, _ in items:
                if key in seen:
                    duplicates.append(key)
                seen.add(key)
        return out

    bad: list[_BadNumber] = []
    parse_int, parse_float = _number_checks(bad)
    try:
        data = json.loads(
            text, object_pairs_hook=pairs, parse_constant=_no_constant, parse_int=parse_int, parse_float=parse_float
        )
    except json.JSONDecodeError as exc:
        raise StrictJSONError("json-syntax", f"not valid JSON: {exc.msg}", exc.lineno, exc.colno) from None
    except _Constant as exc:
        line, col = _find(text, exc.name)
        raise StrictJSONError("non-finite-number", f"{exc.name} is not a JSON number", line, col) from None
    except RecursionError:
        raise InputLimitError("nesting-too-deep", f"nested more than {max_nesting} levels deep") from None
    if bad:
        first = bad[0]
        line, col = _find_number(text, first.literal)
        raise StrictJSONError(first.code, f"{_path_of(data, first)}: {first.message}", line, col)
    if duplicates:
        line, col = _find(text, json.dumps(duplicates[0]), nth=2)
        raise StrictJSONError("duplicate-key", f"duplicate key {duplicates[0]!r}", line, col)
    return data


class _Constant(Exception):
    def __init__(self, name: str) -> None:
        self.name = name


def _no_constant(name: str) -> Any:
    raise _Constant(name)


class _BadNumber:
    """What the decoder holds in place of a number it must not convert, until the parse is done."""

    def __init__(self, code: str, message: str, literal: str) -> None:
        self.code, self.message, self.literal = code, message, literal


def _number_checks(bad: list[_BadNumber]) -> tuple[Callable[[str], Any], Callable[[str], Any]]:
    """``parse_int`` and ``parse_float`` hooks that put a marker in ``bad`` (and in the data) for
    each literal refused, so the parse finishes and the first one can be named by its path."""

    def refuse(code: str, message: str, literal: str) -> _BadNumber:
        marker = _BadNumber(code, message, literal)
        bad.append(marker)
        return marker

    def too_long(literal: str) -> _BadNumber:
        return refuse("number-too-long", f"a number of {len(literal)} characters; the limit is {MAX_NUMBER_CHARS}",
                      literal)

    def bounded_int(literal: str) -> Any:
        # the length is checked before int() runs: past 4300 digits int() raises, and with the
        # interpreter's limit lifted it takes time quadratic in the length
        return too_long(literal) if len(literal) > MAX_NUMBER_CHARS else int(literal)

    def finite_float(literal: str) -> Any:
        if len(literal) > MAX_NUMBER_CHARS:
            return too_long(literal)
        value = float(literal)
        if math.isfinite(value):
            return value
        return refuse("non-finite-number", "a number too large for a 64-bit float (it would read as infinity)", literal)

    return bounded_int, finite_float


def _path_of(data: Any, marker: object) -> str:
    """The dotted path (``tools.0.function.parameters``) at which ``marker`` sits in ``data``."""
    stack: list[tuple[Any, tuple[str, ...]]] = [(data, ())]
    while stack:
        node, path = stack.pop()
        if node is marker:
            return ".".join(path) or "(root)"
        if isinstance(node, dict):
            stack += [(v, (*path, k)) for k, v in node.items()]
        elif isinstance(node, list):
            stack += [(v, (*path, str(i))) for i, v in enumerate(node)]
    return "(root)"


def _find_number(text: str, literal: str) -> tuple[int, int]:
    """Line and column of ``literal`` standing as a value (after ``[``, ``,``, ``:`` or a space), not in a string."""
    match = re.search(r"(?:^|(?<=[\[,:\s]))" + re.escape(literal) + r"(?=[\]},\s]|$)", text)
    if match is None:
        return _find(text, literal)
    pos = match.start()
    return text.count("\n", 0, pos) + 1, pos - (text.rfind("\n", 0, pos) + 1) + 1


def _check_surrogates(text: str) -> None:
    if "\\u" not in text and "\\U" not in text:
        return
    pending_high: re.Match[str] | None = None
    for match in _SURROGATE.finditer(text):
        high = match.group(2) in "89abAB"
        if pending_high is not None:
            if not high and match.start(1) == pending_high.end(1):
                pending_high = None
                continue
            _lone(text, pending_high)
        if high:
            pending_high = match
        else:
            _lone(text, match)
    if pending_high is not None:
        _lone(text, pending_high)


def _lone(text: str, match: re.Match[str]) -> None:
    pos = match.start(1)
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    raise StrictJSONError("lone-surrogate", f"{match.group(1)} is half of a UTF-16 surrogate pair; "
                          "the text cannot be encoded", line, col)


def _find(text: str, needle: str, nth: int = 1) -> tuple[int, int]:
    """Line and column of the ``nth`` occurrence of ``needle`` (1, 1 when absent)."""
    pos = -1
    for _ in range(nth):
        pos = text.find(needle, pos + 1)
        if pos < 0:
            return 1, 1
    return text.count("\n", 0, pos) + 1, pos - (text.rfind("\n", 0, pos) + 1) + 1
