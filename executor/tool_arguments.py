"""Decoding a tool call's argument string: JSON, then YAML, then repaired JSON, then repaired YAML.

Models emit arguments as a JSON string, and sometimes as something close to it: YAML-ish
``key: value`` text, JSON inside a markdown fence or after a sentence, Python literals, trailing
commas, a payload cut off at max_tokens. Each rung of the ladder is tried in order and the first
that yields an object wins; when none does, the caller records a ParserError and uses ``{}``.
The repairs are textual and conservative: they never invent keys or values, only syntax.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from collections.abc import Callable
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*\s*\n(.*?)\n?\s*```\s*$", re.DOTALL)
_PY_LITERALS = {"True": "true", "False": "false", "None": "null"}


#: The rungs past plain JSON: a call decoded there is executed, and recorded as a repair with its raw text.
REPAIR_RUNGS = frozenset({"yaml", "repaired_json", "repaired_yaml"})


class ArgumentsUndecodable(ValueError):
    """No rung of the ladder produced an object; the message says what each rung saw."""


def decode_arguments(raw: str) -> tuple[dict[str, Any], str]:
    """Return the arguments object and the rung that decoded it (json | yaml | repaired_json | repaired_yaml).

    An empty or whitespace-only string is ``{}`` from the ``json`` rung: several providers
    encode a call without arguments that way.
    """
    if not raw.strip():
        return {}, "json"
    failures: list[str] = []
    rungs: list[tuple[str, Callable[[str], Any]]] = [
        ("json", json.loads),
        ("yaml", _yaml_load),
        ("repaired_json", lambda s: json.loads(repair_json_text(s))),
        ("repaired_yaml", lambda s: _yaml_load(_extract_payload(s))),
    ]
    for name, decode in rungs:
        try:
            value = decode(raw)
        except (ValueError, YAMLError, RecursionError) as exc:
            failures.append(f"{name}: {_first_line(exc)}")
            continue
        if isinstance(value, dict):
            try:
                return _json_safe(value), name
            except ValueError as exc:
                failures.append(f"{name}: {exc}")
                continue
        failures.append(f"{name}: decoded to {type(value).__name__}, not an object")
    raise ArgumentsUndecodable("; ".join(failures))


def repair_json_text(text: str) -> str:
    """Syntax-only repairs: fences, surrounding prose, Python literals, trailing commas, truncation."""
    text = _extract_payload(text)
    out: list[str] = []
    stack: list[str] = []
    in_string = False
    escaped = False
    i = 0
    while i < len(text):
        ch = text[i]
        if in_string:
            out.append(ch)
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            i += 1
            continue
        if ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]":
            _drop_trailing_comma(out)
            if stack:
                stack.pop()
        elif ch.isalpha():
            word = re.match(r"[A-Za-z_]+", text[i:])
            assert word is not None
            token = word.group(0)
            out.append(_PY_LITERALS.get(token, token))
            i += len(token)
            continue
        out.append(ch)
        i += 1
    if in_string:
        if escaped:
            out.pop()
        out.append('"')
    while stack:
        _drop_trailing_comma(out)
        out.append(stack.pop())
    return "".join(out)


def _extract_payload(text: str) -> str:
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1)
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if start > 0:
        text = text[start:]
    end = max(text.rfind("}"), text.rfind("]"))
    # keep an unterminated tail: a truncated payload is closed by the repair, not cut
    if end >= 0 and text[end + 1 :].strip() and not _unbalanced(text[: end + 1]):
        text = text[: end + 1]
    return text.strip()


def _unbalanced(text: str) -> bool:
    return text.count("{") != text.count("}") or text.count("[") != text.count("]")


def _drop_trailing_comma(out: list[str]) -> None:
    j = len(out) - 1
    while j >= 0 and out[j].isspace():
        j -= 1
    if j >= 0 and out[j] == ",":
        del out[j]


def _yaml_load(text: str) -> Any:
    return YAML(typ="safe", pure=True).load(text)


def _json_safe(value: Any) -> Any:
    # YAML can build values JSON cannot carry; dates keep their text, anything else is refused
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    if isinstance(value, (_dt.date, _dt.datetime)):
        return value.isoformat()
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise ValueError(f"decoded a {type(value).__name__} value, which JSON cannot carry")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
