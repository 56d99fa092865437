"""From the output folder's logs to matrix rows keyed by (route, model, lane)."""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from capplan.evals.reasoning_replay.analysis.signals import measure
from capplan.evals.reasoning_replay.analysis.verdicts import NOT_MEASURED, notes, verdict
from capplan.evals.reasoning_replay.fixture import ALL_POSITIONS, TRACE_TARGET_CHARS
from capplan.evals.reasoning_replay.provider.lanes import DIRECT
from capplan.evals.reasoning_replay.routes import ROUTES
from capplan.evals.reasoning_replay.store.outdir import OutDir

MEASURED_STEPS = ("params", "text", "opaque_turn1", "opaque")


@dataclass
class Folder:
    """Everything the report reads, with the problems met while reading it."""

    calls: list[dict[str, Any]]
    runs: list[dict[str, Any]]
    cells: dict[str, dict[str, Any]]
    spent: float
    trace_tokens: float
    problems: list[str] = field(default_factory=list)


def load(out: OutDir) -> Folder:
    """Read every log; unreadable lines become problems, never exceptions."""
    calls, p1 = out.calls.read()
    runs, p2 = out.runs.read()
    costs, p3 = out.costs.read()
    cells, p4 = out.cell_states()
    starts = [r for r in runs if isinstance(r.get("trace_tokens"), (int, float))]
    problems = p1 + p2 + p3 + p4
    if starts:
        trace_tokens = float(starts[0]["trace_tokens"])
    else:
        trace_tokens = TRACE_TARGET_CHARS / 4
        if calls:
            problems.append("runs.jsonl has no trace size; T assumed from the fixture's target")
    spent = sum(float(c["usd"]) for c in costs if isinstance(c.get("usd"), (int, float)))
    return Folder(calls, runs, cells, spent, trace_tokens, problems)


def rows(folder: Folder) -> list[dict[str, Any]]:
    """One row per (route, model, lane), plus rows for models that have only cell states."""
    by_model: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for record in folder.calls:
        if record.get("step") in MEASURED_STEPS:
            by_model[(str(record.get("route")), str(record.get("model")))].append(record)
    states: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for state in folder.cells.values():
        states[(str(state.get("route")), str(state.get("model")))].append(state)
    want_direct = {(str(r.get("route")), m) for r in folder.runs for m in r.get("want_direct") or []}
    table: list[dict[str, Any]] = []
    for key in sorted(set(by_model) | set(states)):
        table += _model_rows(key, by_model.get(key, []), states.get(key, []),
                             key in want_direct, folder.trace_tokens)
    return table


def _model_rows(key: tuple[str, str], records: list[dict[str, Any]], states: list[dict[str, Any]],
                want_direct: bool, trace_tokens: float) -> list[dict[str, Any]]:
    route, model = key
    pending = [s for s in states if not s.get("final")]
    complete = bool(states) and not pending
    # Lanes come from measured requests; a settings probe or turn 1 alone is not a row.
    lanes = sorted({str(r.get("lane")) for r in records
                    if r.get("ok") and r.get("step") in ("text", "opaque")})
    if not lanes:
        return [_unmeasured_row(route, model, records, states, complete)]
    out = []
    for lane in lanes:
        signals = [s for step in ("text", "opaque") for position in ALL_POSITIONS
                   for s in measure(records, lane, step, position, trace_tokens)]
        lane_records = [r for r in records if r.get("lane") == lane]
        row = _row(route, model, lane, verdict(signals), complete, records)
        row["cells"] = [s.as_dict() for s in signals]
        row["notes"] = (notes(signals, trace_tokens) + [_state_note(s) for s in pending]
                        + _not_measured_notes(states))
        row["id_prefixes"] = sorted({str(r.get("id_prefix")) for r in lane_records} - {"-"})
        row["calls"] = len(lane_records)
        row["turn1"] = _turn1(records, lane)
        row["fingerprint"] = fingerprint(lane_records)
        row["tool_choice"] = (row["turn1"] or {}).get("tool_choice")
        if row["verdict"] == "baseline-failed":
            row["notes"].append(_baseline_reason(records, states))
        out.append(row)
    if want_direct and DIRECT not in lanes:
        row = _row(route, model, DIRECT, "direct-lane-not-reached", complete, records)
        row["notes"] = [f"direct lane not reached in {len(records)} calls "
                        f"(lanes seen: {', '.join(lanes)}); never a pass"]
        out.append(row)
    return out


def _row(route: str, model: str, lane: str, verdict_: str, complete: bool,
         records: list[dict[str, Any]]) -> dict[str, Any]:
    on_lane = [r for r in records if r.get("lane") == lane]
    stamps = [float(r["t"]) for r in (on_lane or records) if isinstance(r.get("t"), (int, float))]
    measured_on = time.strftime("%Y-%m-%d", time.gmtime(max(stamps))) if stamps else None
    known = ROUTES.get(route)
    return {"route": route, "model": model, "lane": lane, "lanes": bool(known and known.lanes),
            "verdict": verdict_,
            "complete": complete, "cells": [], "notes": [], "id_prefixes": [], "turn1": None,
            "fingerprint": None, "tool_choice": None,
            "calls": 0, "measured_on": measured_on,
            "cost": round(sum(float(r.get("cost") or 0) for r in on_lane), 6)}


def _unmeasured_row(route: str, model: str, records: list[dict[str, Any]],
                    states: list[dict[str, Any]], complete: bool) -> dict[str, Any]:
    seen = {str(r.get("lane")) for r in records}
    lane = seen.pop() if len(seen) == 1 else "-"
    sent = bool(records) or any(s.get("state") == "baseline-failed" for s in states)
    # every call answered, but turn 1 gave nothing to replay (no tool call or no carrier): step 2
    # had nothing to measure, which says nothing about the baseline
    answered = bool(records) and all(r.get("ok") and r.get("step") in ("params", "opaque_turn1") for r in records)
    no_carrier = [s for s in states if s.get("state") == "no-carrier" and s.get("reason")]
    verdict_ = NOT_MEASURED if (answered and no_carrier) or not sent else "baseline-failed"
    row = _row(route, model, lane, verdict_, complete, records)
    row["calls"] = len(records)
    row["notes"] = [str(no_carrier[-1]["reason"])[:240] if answered and no_carrier else _baseline_reason(records, states)]
    row["turn1"] = _turn1(records, lane)
    row["tool_choice"] = (row["turn1"] or {}).get("tool_choice")
    row["fingerprint"] = fingerprint(records)
    return row


def _baseline_reason(records: list[dict[str, Any]], states: list[dict[str, Any]]) -> str:
    failed = [r for r in records if not r.get("ok") or r.get("prompt_tokens") is None]
    if failed:
        last = failed[-1]
        return f"baseline: HTTP {last.get('status')}: {str(last.get('error') or 'no usage')[:200]}"
    reasons = [str(s.get("reason")) for s in states if s.get("reason") and s.get("state") != "done"]
    return reasons[-1][:240] if reasons else "no comparable measurement"


def _not_measured_notes(states: list[dict[str, Any]]) -> list[str]:
    """Why a finished cell has no measurement (e.g. turn 1 returned no tool call)."""
    return [f"{s.get('step')}:{s.get('position')} not measured: {str(s.get('reason'))[:200]}"
            for s in states if s.get("final") and s.get("state") not in ("done", "baseline-failed")
            and s.get("reason")]


def _state_note(state: dict[str, Any]) -> str:
    return f"{state.get('step')}:{state.get('position')} {state.get('state')} (rerun to resume)"


def _turn1(records: list[dict[str, Any]], lane: str) -> dict[str, Any] | None:
    turn1 = [r for r in records if r.get("step") == "opaque_turn1" and r.get("ok")]
    turn1 = [r for r in turn1 if r.get("lane") == lane] or turn1
    if not turn1:
        return None
    last = turn1[-1]
    summary = dict(last.get("turn1") or {})
    summary.update({"status": last.get("status"), "effort": last.get("effort"),
                    "reasoning_tokens": last.get("reasoning_tokens"),
                    "tool_choice": last.get("tool_choice") or "auto"})
    return summary


def fingerprint(records: list[dict[str, Any]]) -> str | None:
    """The one system_fingerprint the measured calls report, ``mixed:…`` for several, else None."""
    seen = sorted({str(r["fingerprint"]) for r in records if r.get("ok") and r.get("fingerprint")})
    if not seen:
        return None
    return seen[0] if len(seen) == 1 else "mixed:" + ",".join(seen)
