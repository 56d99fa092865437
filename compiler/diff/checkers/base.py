"""The checker contract: a name, the plan fields it owns, and field-level changes for them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from capplan.compiler.diff.model import ABSENT, Change
from capplan.compiler.diff.walk import Path, leaf_changes, source_of
from capplan.executor.plan import Provenance


@dataclass(frozen=True)
class Checker:
    """Compares the plan fields under ``owns`` (minus ``excludes``, which another checker owns)."""

    name: str
    description: str
    owns: tuple[Path, ...]
    excludes: tuple[Path, ...] = ()

    def check(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
        """Every change in this checker's fields, in field order."""
        out: list[Change] = []
        for prefix in self.owns:
            for path, before, after in leaf_changes(subtree(old, prefix), subtree(new, prefix), prefix):
                if not any(path[: len(ex)] == ex for ex in self.excludes):
                    out.append(Change(self.name, ".".join(path), before, after, self.source(path, old, new)))
        return out

    def source(self, path: Path, old: Mapping[str, Any], new: Mapping[str, Any]) -> Provenance | None:
        """The layer behind a change; checkers whose fields have no provenance key override this."""
        return source_of(path, new, old)


def subtree(body: Any, path: Path) -> Any:
    """The value at ``path``, or ABSENT when the body has nothing there."""
    node = body
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return ABSENT
        node = node[part]
    return node
