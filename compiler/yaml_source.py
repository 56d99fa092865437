"""Read a YAML (or JSON) input file into plain data plus a position for every key and item.

Positions are 1-based (line, column). This is the only module that talks to ruamel, and
:meth:`SourceFile.position` is the only place a data path is turned into a location.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compiler.diagnostics import Diagnostic, InputError, Severity

Loc = tuple[str | int, ...]


@dataclass
class SourceFile:
    """One parsed input file: display name, content digest, data, and positions by path."""

    display: str
    sha256: str
    data: Any
    positions: dict[Loc, tuple[int, int]] = field(default_factory=dict)

    def position(self, loc: Sequence[str | int]) -> tuple[int, int]:
        """Where ``loc`` is in the file; the nearest enclosing node when it has no own position."""
        path = tuple(loc)
        while path:
            if path in self.positions:
                return self.positions[path]
            path = path[:-1]
        return self.positions.get((), (1, 1))

    def diag(self, loc: Sequence[str | int], code: str, message: str, hint: str | None = None,
             severity: Severity = "error") -> Diagnostic:
        """A diagnostic located at ``loc`` in this file."""
        line, col = self.position(loc)
        return Diagnostic(self.display, line, col, code, message, dotted(loc), hint, severity)


def dotted(loc: Sequence[str | int]) -> str:
    """``('presets', 'qwen', 'match', 0)`` → ``presets.qwen.match[0]``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def read_source(path: Path, display: str | None = None) -> SourceFile:
    """Parse ``path``; every problem becomes a located :class:`InputError`."""
    name = display or str(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError([Diagnostic(name, 1, 1, "file-not-found", "no such file",
                                     hint="check the path; relative paths are taken from the current directory")]) from None
    except IsADirectoryError:
        raise InputError([Diagnostic(name, 1, 1, "file-not-found", "is a directory, not a file")]) from None
    except OSError as exc:
        raise InputError([Diagnostic(name, 1, 1, "file-unreadable", str(exc.strerror or exc))]) from None
    digest = hashlib.sha256(raw).hexdigest()
    if b"\x00" in raw:
        raise InputError([Diagnostic(name, 1, 1, "binary-file", "binary file, expected YAML or JSON text")])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError([Diagnostic(name, line, 1, "binary-file", f"not UTF-8 text ({exc.reason})")]) from None
    data, positions = _parse(text, name)
    if data is None:
        raise InputError([Diagnostic(name, 1, 1, "empty-file", "the file is empty",
                                     hint="a preset or overlay file is a YAML mapping, e.g. `presets: {}`")])
    if not isinstance(data, dict):
        raise InputError([Diagnostic(name, 1, 1, "not-a-mapping",
                                     f"the top level is a {type(data).__name__}, expected a mapping of keys")])
    return SourceFile(name, digest, data, positions)


def _parse(text: str, name: str) -> tuple[Any, dict[Loc, tuple[int, int]]]:
    from ruamel.yaml import YAML
    from ruamel.yaml.constructor import DuplicateKeyError
    from ruamel.yaml.error import MarkedYAMLError

    yaml = YAML(typ="rt", pure=True)
    yaml.allow_duplicate_keys = False
    try:
        node = yaml.load(text)
    except DuplicateKeyError as exc:
        mark = exc.problem_mark
        key = str(exc.problem).split('"')[1] if '"' in str(exc.problem) else "?"
        first = exc.context_mark
        raise InputError([Diagnostic(
            name, (mark.line + 1) if mark else 1, (mark.column + 1) if mark else 1, "duplicate-key",
            f"duplicate key {key!r}" + (f" (first defined at line {first.line + 1})" if first else ""),
            hint="YAML keeps only one of them; delete or merge the duplicate")]) from None
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise InputError([Diagnostic(
            name, (mark.line + 1) if mark else 1, (mark.column + 1) if mark else 1, "yaml-syntax",
            " ".join(str(p) for p in (exc.context, exc.problem) if p) or "invalid YAML")]) from None
    except Exception as exc:  # ruamel raises a few unmarked errors (e.g. bad escapes)
        raise InputError([Diagnostic(name, 1, 1, "yaml-syntax", f"invalid YAML: {exc}")]) from None
    positions: dict[Loc, tuple[int, int]] = {(): (1, 1)}
    return _plain(node, (), positions), positions


def _plain(node: Any, loc: Loc, positions: dict[Loc, tuple[int, int]]) -> Any:
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if isinstance(node, CommentedMap):
        out: dict[Any, Any] = {}
        for key in node:
            try:
                line, col = node.lc.key(key)
                positions[(*loc, key)] = (line + 1, col + 1)
            except (KeyError, TypeError, AttributeError):
                pass
            out[key] = _plain(node[key], (*loc, key), positions)
        return out
    if isinstance(node, CommentedSeq):
        items = []
        for i, item in enumerate(node):
            try:
                line, col = node.lc.item(i)
                positions[(*loc, i)] = (line + 1, col + 1)
            except (KeyError, TypeError, AttributeError):
                pass
            items.append(_plain(item, (*loc, i), positions))
        return items
    if isinstance(node, str):
        return str(node)  # drop ruamel's scalar-string subclasses
    if isinstance(node, bool) or node is None:
        return node
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    return node
