"""Read plan files for diffing: verified, version-aware, matched by model key.

The registry check of :func:`capplan.executor.plan.load_plan` is skipped on purpose: a diff must
work for plans naming policies this installation does not have. The fingerprint check is
not skipped: a plan edited by hand is reported as tampered and never diffed.

Input digests live in the plan body up to plan_version 1 and in the run's ``manifest.json``
from version 2 on. For diffing, a version-2 plan gets its run's digests (``RUN_FIELDS``) from
the manifest beside it, when that manifest lists the plan's fingerprint, so the ``inputs``
checker and the blast radius read both versions the same way.
"""

from __future__ import annotations

import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from capplan.compiler.diff.errors import DiffInputError, PlanShapeError, TamperedPlanError
from capplan.compiler.manifest import MANIFEST_FILE, Manifest
from capplan.core.input_limits import MAX_PLAN_BYTES, InputLimitError, read_limited
from capplan.executor.plan import (
    PLAN_VERSION,
    Plan,
    PlanLoadError,
    PlanTamperedError,
    json_kind,
    load_plan,
    verify_fingerprint,
)
from capplan.core.strict_json import StrictJSONError, loads_strict

#: run-level facts a plan_version 1 body carries and a later plan's manifest holds
RUN_FIELDS = ("inputs", "models_fingerprint")


@dataclass(frozen=True)
class PlanDoc:
    """One plan as data: where it came from, its version, and its body without the fingerprint."""

    key: str
    path: str
    version: int
    body: Mapping[str, Any]
    shape_problem: str | None = None  # why a plan of another version does not fit the current shape

    @property
    def model_key(self) -> str:
        """The key the plan was compiled for (the file stem is the key in a folder of plans)."""
        model = self.body.get("model")
        key = model.get("key") if isinstance(model, Mapping) else None
        return key if isinstance(key, str) else self.key


def doc_of(plan: Plan, path: str, manifest: Manifest | None = None) -> PlanDoc:
    """A freshly compiled plan as a :class:`PlanDoc`, with its run's input digests."""
    return PlanDoc(plan.model.key, path, plan.plan_version, {**plan.body(), **_run_fields(manifest)})


def _run_fields(manifest: Manifest | None) -> dict[str, Any]:
    if manifest is None:
        return {}
    data = manifest.model_dump(mode="json")
    return {k: data[k] for k in RUN_FIELDS}


def read_manifest(folder: Path) -> Manifest | None:
    """The manifest of a plan folder; None when there is none."""
    path = folder / MANIFEST_FILE
    if not path.is_file():
        return None
    data = _read_json(path)
    try:
        return Manifest.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise DiffInputError(f"{path}: not a capplan manifest ({where}: {first['msg']}); recompile the plans "
                             "with `capplan compile`") from None


def load_doc(path: Path, manifest: Manifest | None = None) -> PlanDoc:
    """Read and verify one plan file; every problem is a :class:`DiffInputError`.

    ``manifest`` is the run's manifest; its digests apply when it lists this plan's fingerprint.
    """
    data = _read_json(path)
    if not isinstance(data, dict) or "plan_version" not in data or "fingerprint" not in data:
        raise DiffInputError(f"{path}: not a plan file (a JSON object without plan_version / fingerprint)")
    version = data["plan_version"]
    if not isinstance(version, int) or isinstance(version, bool):
        raise DiffInputError(f"{path}: not a plan file: plan_version must be a whole number, not {json_kind(version)}",
                             hint="plan files are written by capplan, never by hand: recompile it with `capplan compile`")
    try:
        verify_fingerprint(path, data)
    except PlanTamperedError as exc:
        raise TamperedPlanError(
            f"{path}: tampered plan: the fingerprint says {exc.claimed[:12]}… but the body hashes to "
            f"{exc.actual[:12]}…, so it was edited after compilation; it is not diffed. Recompile it with "
            "`capplan compile` instead of editing it"
        ) from None
    fingerprint = data.pop("fingerprint")
    if manifest is not None and version >= 2 and fingerprint in manifest.plans.values():
        data.update(_run_fields(manifest))
    if version == PLAN_VERSION:
        load_plan(path, check_registry=False)  # a refusal is the loader's own located PlanLoadError
        return PlanDoc(path.stem, str(path), version, data)
    return PlanDoc(path.stem, str(path), version, data, _shape_problem(data))


def _read_json(path: Path) -> Any:
    # the plan reader's limits (size, special files, nesting, number length): a plan in a pull
    # request is diffed by CI, so a FIFO, a 100 000-deep list or a 5 000-digit number is an error here too
    try:
        raw = read_limited(path, MAX_PLAN_BYTES)
    except FileNotFoundError:
        raise DiffInputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise DiffInputError(f"{path}: is a folder (compare two files or two folders)") from None
    except OSError as exc:
        raise DiffInputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except InputLimitError as exc:
        raise PlanLoadError(f"not a plan file ({exc})", location=f"{path}:{exc.line}:{exc.col}") from None
    if b"\0" in raw[:8192]:
        raise DiffInputError(f"{path}: binary file, not a plan (plans are UTF-8 JSON)")
    try:
        return loads_strict(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise DiffInputError(f"{path}: not a plan file (not UTF-8 text)") from None
    except StrictJSONError as exc:
        if exc.code == "json-syntax":
            raise DiffInputError(f"{path}: not a plan file (invalid JSON at line {exc.line}, column {exc.col}: "
                                 f"{str(exc).removeprefix('not valid JSON: ')})") from None
        raise PlanLoadError(f"not a plan file ({exc})", location=f"{path}:{exc.line}:{exc.col}") from None
    except InputLimitError as exc:
        raise PlanLoadError(f"not a plan file ({exc})", location=f"{path}:{exc.line}:{exc.col}") from None
    except (ValueError, RecursionError):
        raise PlanLoadError("not a plan file (JSON this reader cannot hold)", location=f"{path}:1:1") from None


def _shape_problem(body: dict[str, Any]) -> str | None:
    """None when a plan of another version has the current shape (so its fields compare)."""
    plan_fields = {k: v for k, v in body.items() if k not in RUN_FIELDS}
    provenance = plan_fields.get("provenance")
    if isinstance(provenance, dict):  # plan_version 1 located a value by line, later ones by key path
        plan_fields["provenance"] = {f: {k: v for k, v in e.items() if k != "line"} if isinstance(e, dict) else e
                                     for f, e in provenance.items()}
    try:
        Plan.model_validate({**plan_fields, "plan_version": PLAN_VERSION, "fingerprint": "0" * 64})
    except ValidationError as exc:
        problems = [f"{'.'.join(str(p) for p in e['loc']) or '(top level)'}: {e['msg']}" for e in exc.errors()]
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        return "; ".join(problems[:3]) + more
    return None


def check_comparable(old: PlanDoc, new: PlanDoc) -> None:
    """Two plans of different versions compare only when both fit the current shape."""
    for doc in (old, new):
        if doc.shape_problem is not None:
            raise PlanShapeError(
                f"cannot compare {old.path} (plan_version {old.version}) with {new.path} "
                f"(plan_version {new.version}): {doc.path} does not have the shape of plan_version "
                f"{PLAN_VERSION}, the version this capplan reads ({doc.shape_problem}); recompile it "
                "with this capplan (`capplan compile`) and diff again"
            )


def load_side(path: Path) -> tuple[str, dict[str, PlanDoc]]:
    """A plan file or a folder of plan files (``*.json``), by model key; returns its kind too."""
    try:
        is_folder = stat.S_ISDIR(path.stat().st_mode)
    except (FileNotFoundError, NotADirectoryError):
        raise DiffInputError(f"{path}: no such file or folder") from None
    except OSError as exc:
        raise DiffInputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if is_folder:
        files = sorted(p for p in path.glob("*.json") if p.is_file() and p.name != MANIFEST_FILE)
        if not files:
            raise DiffInputError(f"{path}: the folder holds no plan files (*.json)")
        manifest = read_manifest(path)
        return "folder", {p.stem: load_doc(p, manifest) for p in files}
    doc = load_doc(path, read_manifest(path.parent))
    return "file", {doc.key: doc}
