"""Where a tool schema's ``$ref``s may point: one rule for every route, checked before any policy runs.

Routes whose sanitiser inlines refs (``strict``, the Gemini and Cohere families) refuse a ref
they cannot resolve, but a ``passthrough`` route hands the schema to the provider as declared,
and the local argument validator would read it too. So a request's tool schemas are held to this
rule first, whatever the route:

* a reference keyword (``$ref``, ``$dynamicRef``, ``$recursiveRef``) is a string that starts
  with ``#``: a JSON pointer into the tool's own parameters (``#/$defs/Node``, ``#`` for the
  root). A URL (``http://``, ``file://``) or a relative path is refused, never fetched; so is a
  plain-name anchor (``#node``), which only a validator that collects ``$anchor``s could follow;
* the pointer names a subschema: every step is a keyword that holds schemas (``properties``,
  ``items``, ``$defs`` …), so a ref cannot point into ``default`` or ``enum`` data;
* a nested ``$id`` is refused: beneath it a validator resolves ``#/…`` against that other
  document, not against the tool's parameters;
* no ref cycle evaluates the same value forever: a recursive type must recurse through
  ``properties`` / ``items`` (``Node.children.items -> Node`` is fine), not through refs and
  ``allOf`` / ``anyOf`` / ``not`` … alone, which never descend into the arguments.

Each problem is a ``(path, message)`` pair whose path, in the segments ``walk_schemas`` uses,
ends at the offending keyword, so a request file can be located to its line.
"""

from __future__ import annotations

import marshal
import re
import threading
from collections import OrderedDict
from typing import Any
from urllib.parse import unquote

from capplan.core.reference_mode import reference_mode
from capplan.executor.policies.schema_sanitizer import (
    SCHEMA_LIST_KEYWORDS,
    SCHEMA_MAP_KEYWORDS,
    SCHEMA_SINGLE_KEYWORDS,
    SchemaPath,
    json_pointer,
    walk_schemas,
)

#: Keywords whose value references another schema.
REF_KEYWORDS: tuple[str, ...] = ("$ref", "$dynamicRef", "$recursiveRef")

#: Keywords whose subschemas apply to the same value as the schema holding them (in place):
#: a cycle made of these and refs never reaches a keyword that descends into the value.
_IN_PLACE_LISTS = frozenset({"allOf", "anyOf", "oneOf"})
_IN_PLACE_SINGLES = frozenset({"not", "if", "then", "else"})
_IN_PLACE_MAPS = frozenset({"dependentSchemas", "dependencies"})

#: byte strings whose absence from a schema's marshal bytes proves it holds nothing to check
#: (``$ref``, the ``Ref`` of ``$dynamicRef`` / ``$recursiveRef``, and ``$id``)
_MARKERS = (b"$ref", b"Ref", b"$id")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_INDEX = re.compile(r"0|[1-9][0-9]{0,8}")
_BAD_ESCAPE = re.compile(r"~(?![01])")
#: longest ref quoted back in a message, and most schemas a cycle's message lists
_SHOWN_CHARS = 80
_SHOWN_STEPS = 8

Problem = tuple[SchemaPath, str]


def ref_problems(params: Any) -> list[Problem]:
    """Every reference problem in a tool's ``parameters`` schema: each ref's in walk order, then cycles.

    Seam *schema ref memo*: the schema's marshal bytes (made in C) tell a schema with no reference
    keyword, or one already found clean, without a walk; a trial validates its tool list again on
    every turn (``benchmarks/executor_build.py``, the tool-list build). The reference mode
    (:mod:`capplan.core.reference_mode`) walks every schema every time.
    """
    if not isinstance(params, dict):
        return []
    if reference_mode():
        return _walk(params)
    key = _content_key(params)
    if key is not None and (not any(marker in key for marker in _MARKERS) or _CLEAN.known(key)):
        return []
    problems = _walk(params)
    if not problems and key is not None:
        _CLEAN.add(key)
    return problems


class _Known:
    """Content keys of schemas already found clean; a bounded LRU, thread-safe.

    A trial validates its tool list again on every turn, and a walk costs far more than a lookup.
    """

    def __init__(self, size: int) -> None:
        self._size = size
        self._seen: OrderedDict[bytes, None] = OrderedDict()
        self._lock = threading.Lock()

    def known(self, key: bytes) -> bool:
        with self._lock:
            if key in self._seen:
                self._seen.move_to_end(key)
                return True
            return False

    def add(self, key: bytes) -> None:
        if len(key) > _MAX_KEY_BYTES:  # the memo holds whole keys, so only ordinary schemas
            return
        with self._lock:
            self._seen[key] = None
            while len(self._seen) > self._size:
                self._seen.popitem(last=False)


#: largest schema (marshal bytes) whose clean verdict is remembered, and how many are
_MAX_KEY_BYTES = 64 * 1024
_CLEAN = _Known(256)


def _content_key(params: dict[str, Any]) -> bytes | None:
    """The schema's marshal bytes: made in C, equal only for equal data of equal types; ``None``
    for data marshal refuses (a subclass of a built-in type), which is then always walked."""
    try:
        return marshal.dumps(params)
    except ValueError:
        return None


def _walk(params: dict[str, Any]) -> list[Problem]:
    problems: list[Problem] = []
    nodes: dict[SchemaPath, dict[str, Any]] = {}
    refs: dict[SchemaPath, list[tuple[str, SchemaPath]]] = {}
    # a definition is usually referenced from many places: each ref string is resolved once
    resolved: dict[str, tuple[SchemaPath | None, str | None]] = {}
    for path, node in walk_schemas(params):
        nodes[path] = node
        if path and "$id" in node:
            problems.append(((*path, "$id"), "a nested $id makes the refs beneath it resolve against another "
                             "document; keep shared schemas under the parameters' $defs instead"))
        for keyword in REF_KEYWORDS:
            if keyword not in node:
                continue
            ref = node[keyword]
            if isinstance(ref, str):
                if ref not in resolved:
                    resolved[ref] = resolve_local_pointer(params, ref)
                target, problem = resolved[ref]
            else:
                target, problem = resolve_local_pointer(params, ref)
            if problem is not None:
                problems.append(((*path, keyword), f"{keyword} {problem}"))
            elif target is not None:
                refs.setdefault(path, []).append((keyword, target))
    problems += _in_place_cycles(nodes, refs)
    return problems


def resolve_local_pointer(root: dict[str, Any], ref: Any) -> tuple[SchemaPath | None, str | None]:
    """``(path of the subschema ref names, None)``, or ``(None, why it cannot be followed)``.

    The path is in ``walk_schemas`` segments (``("$defs", "Node")``, ``("anyOf", 0)``); ``()``
    is the root. A ref to a boolean schema resolves too.
    """
    if not isinstance(ref, str):
        return None, "must be a string: a '#/…' pointer into the tool's parameters, such as '#/$defs/<name>'"
    if not ref.startswith("#"):
        # the value is not quoted back: a URL may carry credentials in its userinfo or query
        scheme = _SCHEME.match(ref)
        kind = f"a URL ({scheme.group().lower()})" if scheme else "a relative reference"
        return None, (f"is {kind} outside the tool's schema, which capplan never fetches: copy the "
                      "definition into the parameters' $defs and point at '#/$defs/<name>'")
    # a URI fragment may percent-encode the pointer (RFC 6901, section 6)
    fragment = unquote(ref[1:]) if "%" in ref else ref[1:]
    if not fragment:
        return (), None
    if not fragment.startswith("/"):
        return None, (f"{_shown(ref)} names an anchor; only JSON-pointer refs into the tool's parameters "
                      "('#/$defs/<name>') are followed")
    segments = fragment[1:].split("/")
    if "~" in fragment:
        if _BAD_ESCAPE.search(fragment):
            return None, f"{_shown(ref)} is not a JSON pointer ('~' is escaped as '~0', '/' as '~1')"
        segments = [raw.replace("~1", "/").replace("~0", "~") for raw in segments]
    return _walk_pointer(root, segments, ref)


def _shown(ref: str) -> str:
    return repr(ref if len(ref) <= _SHOWN_CHARS else ref[:_SHOWN_CHARS] + "…")


class _Shown:
    """A ref as messages quote it, made only when a message is."""

    def __init__(self, ref: str) -> None:
        self.ref = ref

    def __format__(self, spec: str) -> str:
        return _shown(self.ref)


def _walk_pointer(root: dict[str, Any], segments: list[str], ref: str) -> tuple[SchemaPath | None, str | None]:
    node: Any = root
    shown = _Shown(ref)
    path: list[str | int] = []
    i = 0
    while i < len(segments):
        if not isinstance(node, dict):
            return None, f"{shown} goes through {json_pointer(tuple(path)) or '(root)'}, which is not an object schema"
        key = segments[i]
        if key not in node:
            return None, f"{shown} names nothing in the tool's schema (no {json_pointer((*path, key))})"
        value = node[key]
        named = key in SCHEMA_MAP_KEYWORDS or (key == "dependencies" and isinstance(value, dict))
        listed = (key in SCHEMA_LIST_KEYWORDS or key == "items") and isinstance(value, list)
        if named or listed:
            if i + 1 == len(segments):
                return None, f"{shown} points at the whole {key!r} keyword, not at one schema in it"
            member = segments[i + 1]
            step: str | int = member
            if listed:
                if not _INDEX.fullmatch(member) or int(member) >= len(value):
                    return None, f"{shown} names nothing in the tool's schema (no {json_pointer((*path, key, member))})"
                step = int(member)
            elif not isinstance(value, dict) or member not in value:
                return None, f"{shown} names nothing in the tool's schema (no {json_pointer((*path, key, member))})"
            node = value[step]
            path += [key, step]
            i += 2
            if key == "dependencies" and not isinstance(node, dict):
                return None, f"{shown} points at a list of property names, not at a schema"
        elif key in SCHEMA_SINGLE_KEYWORDS:
            node = value
            path.append(key)
            i += 1
        else:
            return None, (f"{shown} points into {key!r}, which holds data, not schemas; "
                          "keep shared schemas under the parameters' $defs")
    if not isinstance(node, (dict, bool)):
        return None, f"{shown} points at a {type(node).__name__}, not at a schema"
    return tuple(path), None


def _in_place_edges(node: dict[str, Any], path: SchemaPath) -> list[tuple[str | None, SchemaPath]]:
    out: list[tuple[str | None, SchemaPath]] = []
    for key, value in node.items():
        if key in _IN_PLACE_LISTS and isinstance(value, list):
            out += [(None, (*path, key, i)) for i, sub in enumerate(value) if isinstance(sub, dict)]
        elif key in _IN_PLACE_SINGLES and isinstance(value, dict):
            out.append((None, (*path, key)))
        elif key in _IN_PLACE_MAPS and isinstance(value, dict):
            out += [(None, (*path, key, name)) for name, sub in value.items() if isinstance(sub, dict)]
    return out


Edge = tuple[str | None, SchemaPath]
#: a search frame: the schema, how it was entered (the keyword, ``None`` for an in-place keyword,
#: and the schema it was entered from), and its edges still to follow
_Frame = tuple[SchemaPath, tuple[str | None, SchemaPath] | None, list[Edge]]


def _in_place_cycles(
    nodes: dict[SchemaPath, dict[str, Any]], refs: dict[SchemaPath, list[tuple[str, SchemaPath]]]
) -> list[Problem]:
    """A problem for each ref that closes a cycle of in-place steps (refs, allOf, not …).

    Every such cycle takes a ref (in-place keywords alone only go deeper), so the search starts
    at the schemas that hold one; it is iterative, as a ref chain may be far longer than the
    interpreter's stack.
    """

    def edges(path: SchemaPath) -> list[tuple[str | None, SchemaPath]]:
        node = nodes.get(path)
        if node is None:  # a boolean schema: nothing applies beneath it
            return []
        own: list[tuple[str | None, SchemaPath]] = [(kw, target) for kw, target in refs.get(path, ())]
        own += _in_place_edges(node, path)
        own.reverse()  # popped from the end, so followed in document order
        return own

    problems: list[Problem] = []
    done: set[SchemaPath] = set()
    for start in refs:
        if start in done:
            continue
        stack: list[_Frame] = [(start, None, edges(start))]
        on_stack = {start: 0}
        while stack:
            path, _, todo = stack[-1]
            if not todo:
                stack.pop()
                del on_stack[path]
                done.add(path)
                continue
            keyword, target = todo.pop()
            if target in on_stack:
                problems.append(_cycle_problem(nodes, target, stack[on_stack[target] + 1:], (path, keyword)))
            elif target not in done:
                on_stack[target] = len(stack)
                stack.append((target, (keyword, path), edges(target)))
    return problems


def _cycle_problem(
    nodes: dict[SchemaPath, dict[str, Any]], first: SchemaPath, cycle: list[_Frame], closing: tuple[SchemaPath, str | None]
) -> Problem:
    """The problem for a cycle through ``first``: ``cycle`` holds the frames entered after it,
    ``closing`` the schema and keyword whose edge leads back to it."""
    # the refs along the cycle, in order, and every schema it passes through
    steps: list[tuple[SchemaPath, str]] = []
    for _, entry, _ in cycle:
        if entry is not None and entry[0] is not None:
            steps.append((entry[1], entry[0]))
    source, keyword = closing
    if keyword is not None:
        steps.append((source, keyword))
    passed = ["#" + json_pointer(path)[:_SHOWN_CHARS] for path in (first, *(path for path, _, _ in cycle), first)]
    if len(passed) > _SHOWN_STEPS:
        # a cycle through thousands of definitions: its ends say where to look
        passed = [*passed[:_SHOWN_STEPS // 2], "…", *passed[-(_SHOWN_STEPS // 2):]]
    chain = " -> ".join(passed)
    # located at the ref that closes the cycle, or the last ref on it when an allOf closes it
    at_source, at_keyword = steps[-1]
    return ((*at_source, at_keyword), f"{at_keyword} cycle {chain} evaluates the same value forever: no step "
            "descends into a property or an item (a recursive type recurses through properties or items)")
