"""What a diff finds: field changes, per-model outcomes, and the whole report."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from capplan.compiler.provenance_lines import Located
from capplan.executor.plan import Provenance


class _Absent:
    """Marks a field one side does not have (distinct from a field whose value is null)."""

    _instance: _Absent | None = None

    def __new__(cls) -> _Absent:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()

ChangeKind = Literal["added", "removed", "modified"]
ModelStatus = Literal["added", "removed", "changed", "inputs-only", "unchanged"]


@dataclass(frozen=True)
class Change:
    """One field that differs, old → new, and the layer that set the value."""

    check: str
    field: str
    old: Any
    new: Any
    source: Provenance | None = None
    #: ``source`` at its line in the file as it is now (filled in for display, never compared)
    located: Located | None = dataclasses.field(default=None, compare=False)

    @property
    def kind(self) -> ChangeKind:
        """``added`` when only the new plan has the field, ``removed`` when only the old one does."""
        if self.old is ABSENT:
            return "added"
        if self.new is ABSENT:
            return "removed"
        return "modified"


@dataclass(frozen=True)
class RoutingChange:
    """One credential-routing field of one model, old → new (:mod:`capplan.compiler.diff.credential_routing`)."""

    model: str
    #: what the field decides: binding, endpoint, key variable, transport pin, gateway, gateway header
    aspect: str
    change: Change


@dataclass(frozen=True)
class ModelDiff:
    """The outcome for one model key."""

    key: str
    old_path: str | None
    new_path: str | None
    old_version: int | None
    new_version: int | None
    changes: tuple[Change, ...] = ()

    @property
    def status(self) -> ModelStatus:
        """``inputs-only``: only input digests differ, so the plan behaves exactly as before. A
        report moves input changes to run level (:attr:`DiffReport.inputs`), so its models are never
        ``inputs-only``; the status stays for the JSON format's stability."""
        if self.old_path is None:
            return "added"
        if self.new_path is None:
            return "removed"
        if self.version_changed or any(c.check != "inputs" for c in self.changes):
            return "changed"
        return "inputs-only" if self.changes else "unchanged"

    @property
    def version_changed(self) -> bool:
        """Both sides exist and were written by different plan versions."""
        return None not in (self.old_version, self.new_version) and self.old_version != self.new_version


@dataclass(frozen=True)
class DiffReport:
    """Every model of both sides, in key order, with the checks that ran and any notes."""

    old_label: str
    new_label: str
    checks: tuple[str, ...]
    models: tuple[ModelDiff, ...]
    notes: tuple[str, ...] = field(default=())
    #: input-digest changes (the ``inputs`` check), once for the run rather than once per model
    inputs: tuple[Change, ...] = field(default=())
    #: which key goes where: found whichever checks ran (a reviewer must see every one)
    credential_routing: tuple[RoutingChange, ...] = field(default=())

    @property
    def differs(self) -> bool:
        """True when any model was added, removed or changed, or an input file's digest changed (exit code 1)."""
        return bool(self.inputs) or bool(self.credential_routing) or any(m.status != "unchanged" for m in self.models)

    @property
    def credential_routing_changed(self) -> bool:
        """True when a model's key, endpoint, transport pin or gateway header changed (``--fail-on credential-routing``)."""
        return bool(self.credential_routing)

    def with_status(self, *statuses: ModelStatus) -> list[ModelDiff]:
        """The models whose status is one of ``statuses``, in key order."""
        return [m for m in self.models if m.status in statuses]

    def counts(self) -> dict[str, int]:
        """Number of models per status (every status present, zero included)."""
        out = {s: 0 for s in ("changed", "inputs-only", "added", "removed", "unchanged")}
        for m in self.models:
            out[m.status] += 1
        return out
