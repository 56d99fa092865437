"""Compiled plans to diff, and resealed variants of them (edited bodies with a valid fingerprint)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from capplan.compiler.compile import compile_paths
from capplan.compiler.manifest import MANIFEST_FILE
from capplan.core.canonical import canonical_bytes, sha256_hex

Body = dict[str, Any]


@cache
def catalogue_bytes() -> dict[str, bytes]:
    """The bundled catalogue's plans, compiled once per test session."""
    compiled = compile_paths()
    return {**{f"{key}.json": plan.to_bytes() for key, plan in compiled.plans.items()},
            MANIFEST_FILE: compiled.manifest.to_bytes()}


def write_catalogue(folder: Path) -> Path:
    """Every catalogue plan as ``<key>.json`` under ``folder``, and the run's manifest."""
    folder.mkdir(parents=True)
    for name, data in catalogue_bytes().items():
        (folder / name).write_bytes(data)
    return folder


def edit_manifest(folder: Path, change: Callable[[Body], None]) -> None:
    """Apply ``change`` to a plan folder's manifest (input digests are run-level facts)."""
    path = folder / MANIFEST_FILE
    body = json.loads(path.read_text(encoding="utf-8"))
    change(body)
    path.write_bytes(canonical_bytes(body))


def sealed(body: Body) -> bytes:
    """Canonical plan bytes with a fingerprint that matches the body."""
    body = {k: v for k, v in body.items() if k != "fingerprint"}
    return canonical_bytes({**body, "fingerprint": sha256_hex(canonical_bytes(body))})


def edit(path: Path, change: Callable[[Body], None]) -> None:
    """Apply ``change`` to the plan at ``path`` and reseal it (a legitimate, different plan).

    The folder's manifest is kept listing the plan, as a compilation that produced it would.
    """
    body = json.loads(path.read_text(encoding="utf-8"))
    was = body.get("fingerprint")
    change(body)
    data = sealed(body)
    path.write_bytes(data)
    if (path.parent / MANIFEST_FILE).is_file():
        now = json.loads(data)["fingerprint"]
        edit_manifest(path.parent, lambda m: m["plans"].update({k: now for k, v in m["plans"].items() if v == was}))


def plan_paths(folder: Path) -> list[Path]:
    """The plan files of a folder (not its manifest)."""
    return sorted(p for p in folder.glob("*.json") if p.name != MANIFEST_FILE)


def body_of(key: str) -> Body:
    """A fresh copy of one catalogue plan's JSON."""
    return copy.deepcopy(json.loads(catalogue_bytes()[f"{key}.json"]))


__all__ = ["Body", "body_of", "edit", "edit_manifest", "plan_paths", "sealed", "write_catalogue"]
