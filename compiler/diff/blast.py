"""Blast radius: for each input file that changed, which models' plans change and which do not.

A change is blamed on an input file when the layer that set the field, before or after, lives
in that file. When exactly one input changed, every plan change is blamed on it; when several
did and a change cannot be traced to one of them, the model is listed as unattributed.
Tracing reads provenance rather than recompiling once per input, so it works between two plan
folders too; where provenance cannot tell, the model is listed as unattributed, not guessed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from capplan.compiler.diff.model import Change, DiffReport
from capplan.compiler.diff.plan_files import PlanDoc
from capplan.compiler.diff.walk import lookup

InputStatus = Literal["modified", "added", "removed"]

#: the digest shown when plans of one side were compiled from different versions of a file
MIXED = "(differs between plans)"


@dataclass(frozen=True)
class InputImpact:
    """One changed input file and the models it does and does not change."""

    path: str
    roles: tuple[str, ...]
    status: InputStatus
    old_sha256: str | None
    new_sha256: str | None
    affects: tuple[str, ...]
    does_not_change: tuple[str, ...]


@dataclass(frozen=True)
class BlastRadius:
    """The whole picture: per input, then model totals."""

    old_label: str
    new_label: str
    inputs: tuple[InputImpact, ...]
    changed: tuple[str, ...]
    unchanged: tuple[str, ...]
    unattributed: tuple[str, ...]
    added: tuple[str, ...]
    removed: tuple[str, ...]
    notes: tuple[str, ...]
    #: models whose credential routing changed (which key is sent where); see the full diff for fields
    credential_routing: tuple[str, ...] = ()


def blast_radius(report: DiffReport, old: Mapping[str, PlanDoc], new: Mapping[str, PlanDoc]) -> BlastRadius:
    """Blame each model's plan changes on the input files that changed between the sides."""
    paired = [m for m in report.models if m.status not in ("added", "removed")]
    old_in, new_in = _digests(old.values()), _digests(new.values())
    changed_paths = sorted(p for p in set(old_in) | set(new_in) if _sha(old_in.get(p)) != _sha(new_in.get(p)))
    changed_models = [m for m in paired if m.status == "changed"]
    blame: dict[str, set[str]] = {p: set() for p in changed_paths}
    unattributed: list[str] = []
    for m in changed_models:
        behaviour = [c for c in m.changes if c.check != "inputs"]
        if len(changed_paths) == 1:
            blame[changed_paths[0]].add(m.key)
            continue
        traced = [_file_behind(c, old[m.key].body, set(changed_paths)) for c in behaviour]
        for file in traced:
            if file is not None:
                blame[file].add(m.key)
        if not behaviour or None in traced:
            unattributed.append(m.key)
    impacts = []
    for path in changed_paths:
        was, now = old_in.get(path), new_in.get(path)
        readers = sorted({m.key for m in paired if path in _paths_of(old[m.key]) | _paths_of(new[m.key])})
        status: InputStatus = "added" if was is None else "removed" if now is None else "modified"
        roles = sorted({*(was.roles if was else ()), *(now.roles if now else ())})
        impacts.append(InputImpact(
            path=path, roles=tuple(roles), status=status, old_sha256=_sha(was), new_sha256=_sha(now),
            affects=tuple(sorted(blame[path])), does_not_change=tuple(k for k in readers if k not in blame[path])))
    return BlastRadius(
        report.old_label, report.new_label, tuple(impacts),
        changed=tuple(m.key for m in changed_models),
        unchanged=tuple(m.key for m in paired if m.status != "changed"),
        unattributed=tuple(unattributed),
        added=tuple(m.key for m in report.with_status("added")),
        removed=tuple(m.key for m in report.with_status("removed")),
        notes=report.notes,
        credential_routing=tuple(dict.fromkeys(r.model for r in report.credential_routing)),
    )


@dataclass
class _Digest:
    sha256: str
    roles: set[str]


def _digests(docs: Iterable[PlanDoc]) -> dict[str, _Digest]:
    """Input display path -> digest and roles, over every plan of one side."""
    out: dict[str, _Digest] = {}
    for doc in docs:
        for role, entry in (doc.body.get("inputs") or {}).items():
            seen = out.setdefault(entry["path"], _Digest(entry["sha256"], set()))
            if seen.sha256 != entry["sha256"]:
                # plans compiled at different times from different versions of one file
                seen.sha256 = MIXED
            seen.roles.add(role)
    return out


def _sha(digest: _Digest | None) -> str | None:
    return digest.sha256 if digest else None


def _paths_of(doc: PlanDoc) -> set[str]:
    return {entry["path"] for entry in (doc.body.get("inputs") or {}).values()}


def _file_behind(change: Change, old: Mapping[str, Any], changed: set[str]) -> str | None:
    """The changed input to blame: the file of the layer that now sets the field, else (a value
    that is no longer set there, e.g. a deleted override) the file of the layer that set it before."""
    before = lookup(change.field, old.get("provenance") or {})
    for source in (change.source, before):
        if source is not None and source.file in changed:
            return source.file
    return None
