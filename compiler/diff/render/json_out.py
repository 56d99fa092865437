"""Stable JSON for tools. Documented in ``capplan diff --help`` and the README.

Stability promise: keys are never removed or renamed within a ``version``; new keys may be
added. Keys are sorted and lists are in a fixed order (models by key, changes by checker then
field), so the output of the same inputs is byte-identical.

Diff document::

    {"format": "capplan-diff", "version": 1, "old": LABEL, "new": LABEL, "checks": [NAME, …],
     "differs": BOOL, "counts": {"changed": N, "inputs-only": N, "added": N, "removed": N, "unchanged": N},
     "notes": [TEXT, …], "credential_routing_changed": BOOL,
     "credential_routing": [{"key": KEY, "aspect": ASPECT, "check": "credential-routing", "field": …,
                             "kind": …, "old": …, "new": …, "layer": …}],
     "inputs": [{"check": "inputs", "field": DOTTED.PATH, "kind": …, "old": VALUE|null, "new": VALUE|null,
                 "layer": null}],
     "models": [{"key": KEY, "status": "changed|inputs-only|added|removed|unchanged",
                 "old_path": PATH|null, "new_path": PATH|null,
                 "plan_version": {"old": INT|null, "new": INT|null},
                 "changes": [{"check": NAME, "field": DOTTED.PATH, "kind": "modified|added|removed",
                              "old": VALUE|null, "new": VALUE|null,
                              "layer": {"layer": LAYER, "file": PATH|null, "key": KEY.PATH|null,
                                        "line": INT|null}|null}]}]}

``layer.key`` is where the plan says the value was set (a key path in ``file``); ``layer.line``
is that key's line in the file as it is when ``capplan diff`` runs (null when it cannot be
found there, e.g. a ``data:`` file or a key since removed).

``old`` is null for an ``added`` field and ``new`` for a ``removed`` one (``kind`` tells a
missing field from a null value).

``credential_routing`` lists every change to a field that decides which credential a model sends
where (binding key, endpoint, key variables, transport pin, gateway flag, OpenRouter headers), each
a change record plus ``key`` (the model) and ``aspect`` (``binding``, ``endpoint``, ``endpoint
variable``, ``key variable``, ``transport pin``, ``gateway``, ``gateway header``); a model new to
the diff whose route no old model used lists the fields it sets as ``added``. The list is built
whichever ``checks`` ran, and ``credential_routing_changed`` is true when it is not empty (exit
code 3 with ``--fail-on credential-routing``). The blast-radius document lists those models'
keys under ``credential_routing``.

``inputs`` lists each change of an input file's digest (and of ``models_fingerprint``) once for
the run: they are run-level facts (``manifest.json``), so a model's ``changes`` never repeat them
and no model is ``inputs-only`` any more (the status and its count stay, always 0). A diff whose
only changes are inputs still ``differs``.

Blast-radius document (``--summary``)::

    {"format": "capplan-blast-radius", "version": 1, "old": LABEL, "new": LABEL, "notes": [TEXT, …],
     "inputs": [{"path": PATH, "roles": [ROLE, …], "status": "modified|added|removed",
                 "old_sha256": HEX|null, "new_sha256": HEX|null,
                 "changes_plan": [KEY, …], "does_not_change": [KEY, …]}],
     "models": {"changed": [KEY, …], "unchanged": [KEY, …], "unattributed": [KEY, …],
                "added": [KEY, …], "removed": [KEY, …]},
     "credential_routing": [KEY, …]}
"""

from __future__ import annotations

import json
from typing import Any

from capplan.compiler.diff.blast import BlastRadius
from capplan.compiler.diff.model import ABSENT, Change, DiffReport, ModelDiff
from capplan.core.redaction import redact_url

VERSION = 1


def render_report(report: DiffReport) -> str:
    """The diff document."""
    return _dump({
        "format": "capplan-diff", "version": VERSION, "old": report.old_label, "new": report.new_label,
        "checks": list(report.checks), "differs": report.differs, "counts": report.counts(),
        "notes": list(report.notes), "models": [_model(m) for m in report.models],
        "inputs": [_change(c) for c in report.inputs],
        "credential_routing_changed": report.credential_routing_changed,
        "credential_routing": [{"key": r.model, "aspect": r.aspect, **_change(r.change)}
                               for r in report.credential_routing],
    })


def _model(m: ModelDiff) -> dict[str, Any]:
    return {"key": m.key, "status": m.status, "old_path": m.old_path, "new_path": m.new_path,
            "plan_version": {"old": m.old_version, "new": m.new_version},
            "changes": [_change(c) for c in m.changes]}


def _change(c: Change) -> dict[str, Any]:
    return {"check": c.check, "field": c.field, "kind": c.kind,
            "old": None if c.old is ABSENT else _unquoted(c.old), "new": None if c.new is ABSENT else _unquoted(c.new),
            "layer": _layer(c)}


def _unquoted(value: Any) -> Any:
    """A URL's userinfo never shows (an old plan may still carry one); everything else as it is."""
    return redact_url(value) if isinstance(value, str) else value


def _layer(c: Change) -> dict[str, Any] | None:
    """The plan's provenance entry plus the line its key is on in the file now (null when not found)."""
    if c.source is None:
        return None
    return {**c.source.model_dump(mode="json"), "line": c.located.line if c.located else None}


def render_blast(blast: BlastRadius) -> str:
    """The blast-radius document."""
    return _dump({
        "format": "capplan-blast-radius", "version": VERSION, "old": blast.old_label, "new": blast.new_label,
        "notes": list(blast.notes),
        "inputs": [{"path": i.path, "roles": list(i.roles), "status": i.status, "old_sha256": i.old_sha256,
                    "new_sha256": i.new_sha256, "changes_plan": list(i.affects),
                    "does_not_change": list(i.does_not_change)} for i in blast.inputs],
        "models": {"changed": list(blast.changed), "unchanged": list(blast.unchanged),
                   "unattributed": list(blast.unattributed), "added": list(blast.added),
                   "removed": list(blast.removed)},
        "credential_routing": list(blast.credential_routing),
    })


def _dump(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
