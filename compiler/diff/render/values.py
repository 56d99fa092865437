"""How values and layers read in the human formats (text and markdown)."""

from __future__ import annotations

import json
from typing import Any

from compiler.diff.model import ABSENT
from executor.plan import Provenance


def show(value: Any) -> str:
    """Compact JSON (so strings are quoted and null is null); a missing field reads ``(absent)``."""
    if value is ABSENT:
        return "(absent)"
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(", ", ": "))


def where(source: Provenance | None) -> str:
    """``preset:kimi (presets/model_presets.yaml:120)``, or empty when no layer is known."""
    if source is None:
        return ""
    if source.file is None:
        return source.layer
    at = f"{source.file}:{source.line}" if source.line else source.file
    return f"{source.layer} ({at})"
