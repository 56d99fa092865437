"""Validate what parsed of an input file whose schema check failed, so lint can check the rest.

A schema error in one preset block must not hide the unknown policy in its sibling, nor the
bad endpoint of a binding further down: ``capplan lint`` reports every problem of a file in one
pass. :func:`validate_parts` removes exactly the keys (or list items) pydantic refused and
validates again; what is refused because of the removal (a required key now missing, a list now
too short) is removed one level up, until the rest validates. The result is the file minus its
broken parts, for the semantic checks only: compile never uses it (it refuses the file), and
no plan is ever built from it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from capplan.core.diagnostics import Diagnostic
from capplan.core.yaml_source import dotted

M = TypeVar("M", bound=BaseModel)

#: rounds of removal before giving up: each round removes one more level above the refused keys,
#: and input nesting is bounded far below this (core.input_limits), so real files settle in 2-4
_MAX_ROUNDS = 12


def validate_parts(data: Any, cls: type[M]) -> M | None:
    """``cls`` validated from ``data`` minus the parts it refuses, or None when nothing usable is left.

    ``data`` is not modified. None when the refusal is at the top (e.g. the file's one required
    mapping is itself broken) or the removals do not settle within the round bound.
    """
    pruned = _copy(data)
    for _ in range(_MAX_ROUNDS):
        try:
            return cls.model_validate(pruned)
        except ValidationError as exc:
            cuts = {_cut_at(err) for err in exc.errors()}
        if () in cuts:
            return None
        # deepest and last items first, so removing a list item does not shift one still to remove
        for loc in sorted(cuts, key=_order, reverse=True):
            _remove(pruned, loc)
    return None


def _cut_at(err: Any) -> tuple[str | int, ...]:
    """Where to cut for one pydantic error: the refused key itself, or, for a missing key, its mapping."""
    # validator labels (``function-after[...]``) and union branch names are not data keys
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and "[" in p))
    return loc[:-1] if err["type"] == "missing" else loc


def _order(loc: tuple[str | int, ...]) -> tuple[int, list[tuple[int, int | str]]]:
    """Sort key: depth, then the path with list indexes compared as numbers."""
    return len(loc), [(0, p) if isinstance(p, int) else (1, str(p)) for p in loc]


def _remove(node: Any, loc: tuple[str | int, ...]) -> None:
    """Delete ``loc`` from the nested data; a path that is already gone (its parent was cut) is a no-op."""
    for part in loc[:-1]:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            return
    last = loc[-1]
    if isinstance(node, dict):
        node.pop(last, None)
    elif isinstance(node, list) and isinstance(last, int) and 0 <= last < len(node):
        del node[last]


def _copy(node: Any) -> Any:
    """A copy of the mappings and lists of ``node`` (scalars are immutable and shared)."""
    if isinstance(node, dict):
        return {k: _copy(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_copy(v) for v in node]
    return node


def without_broken_blocks(data: Any, cls: type[M], errors: Iterable[Diagnostic], display: str,
                          sections: tuple[str, ...]) -> M | None:
    """``cls`` from ``data`` without every entry of ``sections`` that an error in ``errors`` is about.

    For the checks that compile a whole run (lint with a run config): a preset with an unknown
    policy or a binding with a bad endpoint cannot be compiled, so it is left out like a block
    the schema refused; its errors are reported already. An entry is matched by its key path
    (``presets.<name>``); a name that contains dots may take a sibling with it, which only means
    fewer whole-run findings, never a wrong one.
    """
    paths = [d.path for d in errors if d.file == display and d.severity == "error"]
    pruned = _copy(data)
    for section in sections:
        entries = pruned.get(section) if isinstance(pruned, dict) else None
        if not isinstance(entries, dict):
            continue
        for key in list(entries):
            prefix = dotted((section, key))
            if any(p == prefix or p.startswith((prefix + ".", prefix + "[")) for p in paths):
                del entries[key]
    return validate_parts(pruned, cls)
