"""Field-level comparison of two plan bodies, and which layer set a field.

Bodies are compared as JSON data, not as plan objects, so a plan of an earlier
``plan_version`` with a compatible shape compares the same way as a current one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from capplan.compiler.diff.model import ABSENT
from capplan.executor.plan import Provenance

Path = tuple[str, ...]


def leaf_changes(old: Any, new: Any, path: Path = ()) -> Iterator[tuple[Path, Any, Any]]:
    """Every differing path. Mappings present on both sides are entered; anything else
    (lists, scalars, a mapping on one side only) is compared whole, so an added value rule is
    one change rather than one per field of the rule."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for key in sorted(set(old) | set(new)):
            yield from leaf_changes(old.get(key, ABSENT), new.get(key, ABSENT), (*path, str(key)))
    elif not same(old, new):
        yield path, old, new


def same(a: Any, b: Any) -> bool:
    """Equal as JSON: ``1`` and ``true`` differ, as do ``1`` and ``1.0`` (the plan bytes differ too)."""
    if a is ABSENT or b is ABSENT:
        return a is b
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def dotted(path: Path) -> str:
    """The provenance spelling of a field path."""
    return ".".join(path)


def source_of(path: Path, new_body: Mapping[str, Any] | None, old_body: Mapping[str, Any] | None) -> Provenance | None:
    """The layer that set ``path``: the new plan's provenance where it has one, else the old's."""
    for body in (new_body, old_body):
        if body is None:
            continue
        found = lookup(dotted(path), body.get("provenance") or {})
        if found is not None:
            return found
    return None


def lookup(field: str, provenance: Mapping[str, Any]) -> Provenance | None:
    """The entry for ``field`` or its nearest recorded ancestor; for a whole subtree, the one
    layer that set everything recorded under it (None when several layers did)."""
    probe = field
    while probe:
        if probe in provenance:
            return provenance_entry(provenance[probe])
        probe = probe.rpartition(".")[0]
    below = [provenance_entry(v) for k, v in provenance.items() if k.startswith(field + ".")]
    layers = {(p.layer, p.file) for p in below}
    if len(layers) == 1:
        return enclosing(below)
    return None


def provenance_entry(raw: Mapping[str, Any]) -> Provenance:
    """One provenance entry of a plan of any version (plan_version 1 recorded a line, not a key path)."""
    return Provenance.model_validate({k: v for k, v in raw.items() if k != "line"})


def enclosing(entries: list[Provenance]) -> Provenance:
    """Entries of one layer and file as one: located at the innermost key path holding all of them."""
    keys = [(p.key or "").split(".") for p in entries]
    common: list[str] = []
    for parts in zip(*keys):
        if len(set(parts)) != 1:
            break
        common.append(parts[0])
    return entries[0].model_copy(update={"key": ".".join(common) or None})


def subtree(body: Any, path: Path) -> Any:
    """The value at ``path``, or ABSENT when the body has nothing there."""
    node = body
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return ABSENT
        node = node[part]
    return node
