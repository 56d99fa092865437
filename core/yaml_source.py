"""Read a YAML (or JSON) input file into plain data plus a position for every key and item.

Positions are 1-based (line, column). This is the only module that talks to ruamel, and
:meth:`SourceFile.position` is the only place a data path is turned into a location.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capplan.core.diagnostics import Diagnostic, InputError, Severity
from capplan.core.reference_mode import reference_mode
from capplan.core.yaml_import import import_yaml
from capplan.core.input_limits import (
    MAX_ALIAS_EXPANSION,
    MAX_ALIASES,
    MAX_CONFIG_BYTES,
    MAX_NESTING,
    InputLimitError,
    check_flow_nesting,
    read_limited,
)

Loc = tuple[str | int, ...]
#: a YAML file's data and the position of every key and item in it
Parsed = tuple[dict[str, Any], dict[Loc, tuple[int, int]]]


@dataclass
class SourceFile:
    """One parsed input file: display name, content digest, data, and positions by path."""

    display: str
    sha256: str
    data: Any
    positions: dict[Loc, tuple[int, int]] = field(default_factory=dict)
    #: how plans and the manifest name this file (see capplan.compiler.project_root); diagnostics use ``display``
    name: str | None = None
    _by_key: dict[str, int] | None = field(default=None, repr=False, compare=False)

    @property
    def stable_name(self) -> str:
        """The file's name in plans: independent of the current directory and the machine."""
        return self.name if self.name is not None else self.display

    def position(self, loc: Sequence[str | int]) -> tuple[int, int]:
        """Where ``loc`` is in the file; the nearest enclosing node when it has no own position."""
        path = tuple(loc)
        while path:
            if path in self.positions:
                return self.positions[path]
            path = path[:-1]
        return self.positions.get((), (1, 1))

    def key_path(self, loc: Sequence[str | int]) -> str:
        """The dotted key path of ``loc`` (or its nearest positioned ancestor): what plans record
        as provenance, because it stays put when lines are added or removed elsewhere in the file."""
        path = tuple(loc)
        while path and path not in self.positions:
            path = path[:-1]
        return dotted(path)

    def line_of(self, key_path: str) -> int | None:
        """The line a :meth:`key_path` sits on in this file, or None when the file has no such key."""
        if self._by_key is None:
            self._by_key = {dotted(loc): pos[0] for loc, pos in self.positions.items()}
        return self._by_key.get(key_path)

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
        raw = read_limited(path, MAX_CONFIG_BYTES)
    except InputLimitError as exc:
        raise InputError([limit_diagnostic(name, exc)]) from None
    except FileNotFoundError:
        raise InputError([Diagnostic(name, 1, 1, "file-not-found", "no such file",
                                     hint="check the path; relative paths are taken from the current directory")]) from None
    except IsADirectoryError:
        raise InputError([Diagnostic(name, 1, 1, "file-not-found", "is a directory, not a file")]) from None
    except OSError as exc:
        raise InputError([Diagnostic(name, 1, 1, "file-unreadable", str(exc.strerror or exc))]) from None
    return source_from_bytes(raw, name)


#: small files parsed lately, by (display name, sha256): ``capplan lint`` looks at a file up to
#: three times (task file? which kind? then the file itself), and parsing with positions is the
#: costly part. Same bytes, same parse; each caller gets its own copy of the data. The reference mode
#: (:mod:`capplan.core.reference_mode`) keeps nothing here: every call parses.
_RECENT: dict[tuple[str, str], tuple[Any, dict[Loc, tuple[int, int]]]] = {}
_RECENT_MAX_BYTES = 64 * 1024
_RECENT_FILES = 4
_RECENT_LOCK = threading.Lock()


def source_from_bytes(raw: bytes, name: str) -> SourceFile:
    """Parse file content already in memory (e.g. a task file carried inside a trial spec)."""
    digest = hashlib.sha256(raw).hexdigest()
    recent = None if reference_mode() else _RECENT.get((name, digest))
    if recent is not None:
        import copy

        return SourceFile(name, digest, copy.deepcopy(recent[0]), dict(recent[1]))
    if b"\x00" in raw:
        raise InputError([Diagnostic(name, 1, 1, "binary-file", "binary file, expected YAML or JSON text")])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError([Diagnostic(name, line, 1, "binary-file", f"not UTF-8 text ({exc.reason})")]) from None
    try:
        check_flow_nesting(text)
        data, positions = _parse(text, name)
    except InputLimitError as exc:
        raise InputError([limit_diagnostic(name, exc)]) from None
    if data is None:
        raise InputError([Diagnostic(name, 1, 1, "empty-file", "the file is empty",
                                     hint="a preset or overlay file is a YAML mapping, e.g. `presets: {}`")])
    if not isinstance(data, dict):
        raise InputError([Diagnostic(name, 1, 1, "not-a-mapping",
                                     f"the top level is a {type(data).__name__}, expected a mapping of keys")])
    if len(raw) <= _RECENT_MAX_BYTES and not reference_mode():
        import copy

        kept = (copy.deepcopy(data), dict(positions))
        with _RECENT_LOCK:
            while len(_RECENT) >= _RECENT_FILES:
                del _RECENT[next(iter(_RECENT))]
            _RECENT[(name, digest)] = kept
    return SourceFile(name, digest, data, positions)


def read_bundled(path: Path, display: str, shipped: Callable[[str], Parsed | None] | None = None) -> SourceFile:
    """A YAML file that ships with capplan: its parse shipped beside it, else libyaml's.

    ``shipped`` finds that parse by the sha256 of the file's bytes (the compiler passes
    :func:`capplan.compiler.bundled_index.lookup`, which owns where the bundled files live);
    without it, or when it knows no such file, libyaml parses the bytes.

    Only for bundled data: it is capplan's own, a test holds that both readers (and the shipped
    parse) give the same data and the same positions for every bundled file, and it needs none
    of the alias and duplicate-key guards that untrusted input does.

    Seam *bundled parse*: ``capplan lint`` and ``compile`` start without PyYAML or ruamel's parse
    (``benchmarks/compiler_speed.py``); the reference mode (:mod:`capplan.core.reference_mode`)
    reads the file with the careful reader.
    """
    if reference_mode():
        return read_source(path, display)
    try:
        raw = read_limited(path, MAX_CONFIG_BYTES)
    except (OSError, InputLimitError):
        return read_source(path, display)  # raises the located error
    digest = hashlib.sha256(raw).hexdigest()
    known = shipped(digest) if shipped is not None else None
    if known is None:
        known = parse_with_libyaml(raw)
    if known is None:
        return read_source(path, display)
    return SourceFile(display, digest, known[0], known[1])


def parse_with_libyaml(raw: bytes) -> Parsed | None:
    """Data and positions of a bundled YAML file by libyaml (~25x faster than ruamel); None when
    libyaml is missing or the text is not a mapping it reads (the careful reader then says why)."""
    yaml = import_yaml()

    loader_cls = getattr(yaml, "CSafeLoader", None)
    if loader_cls is None:
        return None
    try:
        loader = loader_cls(raw)
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
            positions: dict[Loc, tuple[int, int]] = {(): (1, 1)}
            if isinstance(data, dict):
                _libyaml_positions(loader, node, (), positions)
        finally:
            loader.dispose()
    except yaml.YAMLError:
        return None
    if not isinstance(data, dict):
        return None
    return data, positions


def _libyaml_positions(loader: Any, node: Any, loc: Loc, positions: dict[Loc, tuple[int, int]]) -> None:
    """Record where every key and item sits, as the ruamel reader does (1-based)."""
    yaml = import_yaml()

    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            here = (*loc, key)
            positions[here] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            _libyaml_positions(loader, value_node, here, positions)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            here = (*loc, index)
            positions[here] = (item.start_mark.line + 1, item.start_mark.column + 1)
            _libyaml_positions(loader, item, here, positions)


def limit_diagnostic(name: str, exc: InputLimitError) -> Diagnostic:
    """The located error for a breached input limit (the README lists the limits)."""
    return Diagnostic(name, exc.line, exc.col, exc.code, str(exc),
                      hint="capplan bounds every input it reads; see the README's Limits section")


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
            " ".join(" ".join(str(p).split()) for p in (exc.context, exc.problem) if p) or "invalid YAML")]) from None
    except RecursionError:
        # block-style nesting the text scan cannot see; the parser ran out of stack
        raise InputLimitError("nesting-too-deep", f"nested more than {MAX_NESTING} levels deep") from None
    except Exception as exc:  # ruamel raises a few unmarked errors (e.g. bad escapes)
        # one line per problem: ruamel's text carries its own multi-line position report
        raise InputError([Diagnostic(name, 1, 1, "yaml-syntax", "invalid YAML: " + " ".join(str(exc).split()))]) from None
    positions: dict[Loc, tuple[int, int]] = {(): (1, 1)}
    return _Plain(positions, name).convert(node, (), None), positions


class _Plain:
    """ruamel's tree → plain dicts, lists and scalars, recording positions.

    Aliases share one node in ruamel's tree but become copies here, so a few hundred bytes of
    nested aliases can stand for billions of nodes. Each alias use in the text is counted, and
    so is the size of what it stands for (a node each, a string one per 64 characters, memoised per
    anchored node), before anything is copied. A node that contains itself is refused.
    """

    def __init__(self, positions: dict[Loc, tuple[int, int]], name: str = "<input>") -> None:
        self.positions = positions
        self.name = name
        self.anchored: set[int] = set()
        self.active: set[int] = set()
        self.sizes: dict[int, int] = {}
        self.copying = 0  # > 0 inside an alias's copy, whose own aliases were counted at their first sight
        self.aliases = 0
        self.expanded = 0

    def convert(self, node: Any, loc: Loc, at: tuple[int, int] | None) -> Any:
        from ruamel.yaml.comments import CommentedMap, CommentedSeq

        line, col = at or (1, 1)
        if len(loc) > MAX_NESTING:
            raise InputLimitError("nesting-too-deep", f"nested more than {MAX_NESTING} levels deep", line, col)
        anchor = getattr(getattr(node, "anchor", None), "value", None)
        if anchor is not None and id(node) in self.active:
            raise InputLimitError("recursive-alias", f"alias *{anchor} refers to a node that contains it", line, col)
        if anchor is not None and id(node) in self.anchored:
            if not self.copying:
                self._count_alias(node, anchor, line, col)
            self.copying += 1
            try:
                return self._convert(node, loc, at, CommentedMap, CommentedSeq)
            finally:
                self.copying -= 1
        if anchor is not None:
            self.anchored.add(id(node))
        return self._convert(node, loc, at, CommentedMap, CommentedSeq)

    def _convert(self, node: Any, loc: Loc, at: tuple[int, int] | None, cmap: Any, cseq: Any) -> Any:
        if isinstance(node, (cmap, cseq)):
            self._check_tag(node, loc, at)
        if isinstance(node, cmap):
            self.active.add(id(node))
            out: dict[Any, Any] = {}
            for key in node:
                here = self._position(node.lc.key, key, (*loc, key))
                out[key] = self.convert(node[key], (*loc, key), here or at)
            self.active.discard(id(node))
            return out
        if isinstance(node, cseq):
            self.active.add(id(node))
            items = []
            for i, item in enumerate(node):
                here = self._position(node.lc.item, i, (*loc, i))
                items.append(self.convert(item, (*loc, i), here or at))
            self.active.discard(id(node))
            return items
        return self._scalar(node, loc, at)

    def _scalar(self, node: Any, loc: Loc, at: tuple[int, int] | None) -> Any:
        from ruamel.yaml.comments import TaggedScalar

        if isinstance(node, TaggedScalar):
            if _tag_of(node) == _STR_TAG:  # `!!str "x"` is the string "x", nothing else
                return str(node.value)
            self._refuse(loc, at, "unsupported-tag", f"YAML tag {_tag_of(node)!r} is not supported here",
                         "remove the tag: capplan reads plain strings, numbers, booleans, lists and mappings")
        if isinstance(node, (bytes, bytearray)) or _is_set(node):
            kind = "binary (!!binary)" if isinstance(node, (bytes, bytearray)) else "set (!!set)"
            self._refuse(loc, at, "unsupported-tag", f"a YAML {kind} value is not supported here",
                         "write a string, or a list `[a, b]` where several values belong")
        return _scalar(node)

    def _check_tag(self, node: Any, loc: Loc, at: tuple[int, int] | None) -> None:
        tag = _tag_of(node)
        if tag is not None and not tag.startswith("tag:yaml.org,2002:"):
            self._refuse(loc, at, "unsupported-tag", f"YAML tag {tag!r} is not supported here",
                         "remove the tag: capplan gives no meaning to application tags")

    def _refuse(self, loc: Loc, at: tuple[int, int] | None, code: str, message: str, hint: str) -> None:
        line, col = at or (1, 1)
        raise InputError([Diagnostic(self.name, line, col, code, message, dotted(loc), hint)])

    def _position(self, lookup: Any, key: Any, loc: Loc) -> tuple[int, int] | None:
        try:
            line, col = lookup(key)
        except (KeyError, TypeError, AttributeError):
            return None
        self.positions[loc] = (line + 1, col + 1)
        return line + 1, col + 1

    def _count_alias(self, node: Any, anchor: str, line: int, col: int) -> None:
        self.aliases += 1
        if self.aliases > MAX_ALIASES:
            raise InputLimitError("too-many-aliases", f"more than {MAX_ALIASES} alias uses in one document", line, col)
        self.expanded += self._size(node)
        if self.expanded > MAX_ALIAS_EXPANSION:
            raise InputLimitError("alias-expansion", f"aliases (here *{anchor}) expand the document past "
                                  f"{MAX_ALIAS_EXPANSION} nodes; is it an alias bomb?", line, col)

    def _size(self, node: Any) -> int:
        """Nodes ``node`` expands to (a string counts a node per 64 characters); memoised, linear in the text."""
        if isinstance(node, str):
            return 1 + len(node) // 64
        if not isinstance(node, (dict, list)):
            return 1
        known = self.sizes.get(id(node))
        if known is None:
            known = 1 + sum(self._size(v) for v in (node.values() if isinstance(node, dict) else node))
            self.sizes[id(node)] = known
        return known


_STR_TAG = "tag:yaml.org,2002:str"


def _tag_of(node: Any) -> str | None:
    """The explicit tag ruamel kept on ``node`` (None for an untagged node)."""
    tag = getattr(node, "tag", None)
    value = getattr(tag, "value", tag)
    return value if isinstance(value, str) and value else None


def _is_set(node: Any) -> bool:
    from collections.abc import Set

    return isinstance(node, Set)


def _scalar(node: Any) -> Any:
    if isinstance(node, str):
        return str(node)  # drop ruamel's scalar-string subclasses
    if isinstance(node, bool) or node is None:
        return node
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    return node
