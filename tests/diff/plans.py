"""Compiled plans to diff, and resealed variants of them (edited bodies with a valid fingerprint)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from compiler.compile import compile_paths
from compiler.golden import write_plans
from executor.canonical import canonical_bytes, sha256_hex

Body = dict[str, Any]


@cache
def catalogue_bytes() -> dict[str, bytes]:
    """The bundled catalogue's plans, compiled once per test session."""
    return {key: plan.to_bytes() for key, plan in compile_paths().plans.items()}


def write_catalogue(folder: Path) -> Path:
    """Every catalogue plan as ``<key>.json`` under ``folder``."""
    folder.mkdir(parents=True)
    for key, data in catalogue_bytes().items():
        (folder / f"{key}.json").write_bytes(data)
    return folder


def sealed(body: Body) -> bytes:
    """Canonical plan bytes with a fingerprint that matches the body."""
    body = {k: v for k, v in body.items() if k != "fingerprint"}
    return canonical_bytes({**body, "fingerprint": sha256_hex(canonical_bytes(body))})


def edit(path: Path, change: Callable[[Body], None]) -> None:
    """Apply ``change`` to the plan at ``path`` and reseal it (a legitimate, different plan)."""
    body = json.loads(path.read_text(encoding="utf-8"))
    change(body)
    path.write_bytes(sealed(body))


def body_of(key: str) -> Body:
    """A fresh copy of one catalogue plan's JSON."""
    return copy.deepcopy(json.loads(catalogue_bytes()[key]))


__all__ = ["Body", "body_of", "edit", "sealed", "write_catalogue", "write_plans"]
