"""How values and layers read in the human formats (text and markdown)."""

from __future__ import annotations

import json
from typing import Any

from capplan.compiler.diff.model import ABSENT, Change
from capplan.compiler.provenance_lines import Located
from capplan.core.redaction import redact_url


def show(value: Any) -> str:
    """Compact JSON (so strings are quoted and null is null); a missing field reads ``(absent)``.

    A URL's userinfo (``user:pass@``) never shows: an old plan may still carry one.
    """
    if value is ABSENT:
        return "(absent)"
    return redact_url(json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(", ", ": ")))


def where(change: Change) -> str:
    """``preset:kimi (bundled:model_presets.yaml:120)``, or empty when no layer is known.

    The line is the key's line in the file now (``change.located``); without one, the key path.
    """
    source = change.source
    if source is None:
        return ""
    located = change.located or Located(source.layer, source.file, None, source.key)
    at = located.at()
    return f"{source.layer} ({at})" if at else source.layer
