"""``preset``: which preset matched, and the model identity (provider, name, model id, wire model)."""

from collections.abc import Mapping
from typing import Any

from capplan.compiler.diff.checkers.base import Checker
from capplan.compiler.diff.walk import Path, enclosing, provenance_entry, source_of
from capplan.executor.plan import Provenance


class PresetChecker(Checker):
    """The matched preset has no provenance key of its own; the preset's layer is its source."""

    def source(self, path: Path, old: Mapping[str, Any], new: Mapping[str, Any]) -> Provenance | None:
        if path != ("effective_preset",):
            return source_of(path, new, old)
        for body in (new, old):
            name = body.get("effective_preset")
            layer = "default" if name == "default" else f"preset:{name}"
            entries = [provenance_entry(v) for v in (body.get("provenance") or {}).values()]
            hits = [p for p in entries if p.layer == layer]
            if hits:
                return enclosing(hits)
        return None


CHECKER = PresetChecker(
    name="preset",
    description="effective_preset (which preset matched) and the model identity",
    owns=(("effective_preset",), ("model",)),
)
