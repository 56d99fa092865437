"""The one place the probe tests read an overlay snippet's shape.

A snippet is a ``probe_evidence:`` block (one entry per probed route, each measured value with its
outcome). The lane tests assert on the rules it makes, through :func:`snippet_rules`: every
refused value as the ``reject`` rule the compiler turns it into, with the evidence sentence the
compiler writes, so a change of the block's shape is one edit here, not one per test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from capplan.compiler.inputs.overlay_file import OverlayFile
from capplan.compiler.probe_evidence import canonical_value, evidence_sentence


def snippet_rules(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """``(param, value key) -> {action, evidence}`` for every refused value the snippet holds."""
    overlay = OverlayFile.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for route in overlay.probe_evidence:
        for param, by_value in route.values.items():
            for raw, value in by_value.items():
                key = canonical_value(param, raw)
                assert key is not None, f"{path}: {param}={raw!r} is no value of {param}"
                if value.outcome == "refused":
                    found[(param, key)] = {"action": "reject", "evidence": evidence_sentence(route, value)}
    return found
