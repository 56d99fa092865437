"""What ``trial view`` embeds: the runs' headers, the matrix data and one detail block per trial.

Everything here is plain JSON-ready data; the page renders it in the browser with
``textContent`` only, so no recorded text is ever parsed as HTML. The index (one small
object per trial) is parsed when the page opens; a trial's detail (its conversation, calls
and verdict) is a block of its own, parsed only when that trial is opened, so a page of
10 000 trials opens quickly. Texts every trial of a task repeats (the system prompt, the tool
schemas) are stored once and referenced by number.

With two or more columns (runs or models) the index also holds the comparison the server's
comparison page shows (:mod:`capplan.trials.report.why`): the verdict line per pair, each
column's cost, tokens and latency, the flipped tasks with their trials' numbers in the page,
and where each flip's two conversations part. The side-by-side view draws both conversations
from the trials' own detail blocks, so no conversation is embedded twice.

The trial files are read defensively: fields other engineers add over time (per-turn
checkpoints, grader reasons, call journals) are passed through as they are and shown
generically; a trial file that does not read back becomes a visible problem in that trial's
view, not a failed page.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from capplan.core.redaction import redact_text
from capplan.trials.report.compare import Column, columns_of, compare
from capplan.trials.report.run_data import OUTCOMES, JournalCalls, LoadedRun, RunDataError, TrialResult, journal_calls
from capplan.trials.report.why import comparison_json, diverges_at
from capplan.trials.run_folder.summary import summarize

#: the trajectory keys the chat and the side panels render; every other key is shown as recorded
_SHOWN_TRAJECTORY = {"format", "version", "trial", "system_prompt", "tools", "messages", "tool_calls", "retries",
                     "summarize_events", "user_reply_guard_events", "termination", "final_state", "checkpoints", "metadata"}
_SHOWN_METRICS = {"format", "version", "trial", "calls", "grade", "status", "termination_reason", "counts_against_model",
                  "turns", "max_turns", "n_calls"}

#: the fields of one trial's short array in the index, in order
TRIAL_FIELDS = ("column", "task", "index", "outcome", "reason", "cost_usd", "user_cost_usd", "turns", "attempt", "key",
                "status", "tokens")
_KEY = TRIAL_FIELDS.index("key")


@dataclass
class _Shared:
    """Texts stored once in the page, referenced by index from each trial's detail."""

    texts: list[Any] = field(default_factory=list)
    index: dict[str, int] = field(default_factory=dict)

    def ref(self, value: Any) -> int:
        text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        if digest not in self.index:
            self.index[digest] = len(self.texts)
            self.texts.append(value)
        return self.index[digest]


@dataclass
class Payload:
    """The page's data: ``index`` (always parsed) and one detail per trial (parsed on demand)."""

    index: dict[str, Any]
    details: list[dict[str, Any]]


def _pack_digest(tasks: list[tuple[str, str]]) -> str:
    """One digest per task pack: sha256 over its tasks' ``id sha256`` lines, sorted."""
    body = "\n".join(f"{task} {sha}" for task, sha in sorted(tasks))
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def _exit_status(run: LoadedRun) -> dict[str, str]:
    """What ``trial run`` ended with, as far as the folder can tell, and why."""
    m = run.manifest
    counts = Counter(t.status for t in run.trials)
    config = sum(1 for t in run.trials if t.termination_reason == "configuration_error")
    expected = None
    if m.settings is not None and m.plans and m.tasks:
        expected = m.settings.trials * len(m.plans) * len(m.tasks)
    finished = sum(1 for t in run.trials if t.status != "interrupted")
    if m.ended_at is None and m.started_at is not None:
        return {"status": "running or killed", "why": "run.json has no end time: the run is still going, or its "
                "process was killed; run the same command again to resume"}
    if m.interrupted:
        return {"status": "130 (interrupted)", "why": f"{len(m.interrupted)} trial(s) did not finish; run the same "
                "command again to resume"}
    if config:
        return {"status": "1 (configuration error)", "why": f"the run stopped at a configuration error; {config} "
                "trial(s) aborted (fix it, then rerun with --retry-aborted)"}
    if expected is not None and finished < expected:
        return {"status": "1 (stopped early)", "why": f"{finished} of {expected} trial(s) finished (a --max-cost "
                "budget stop, or a stop before every trial started)"}
    if counts.get("error") or counts.get("aborted"):
        return {"status": "1 unless tolerated by --fail-on-error",
                "why": f"{counts.get('error', 0)} error and {counts.get('aborted', 0)} aborted trial(s)"}
    return {"status": "0", "why": "every trial finished with an outcome the model is answerable for"}


def _run_header(run: LoadedRun, columns: list[Column]) -> dict[str, Any]:
    m = run.manifest
    summary = run.summary()
    packs: dict[str, list[tuple[str, str]]] = {}
    for task_id, task in m.tasks.items():
        packs.setdefault(task.pack, []).append((task_id, task.sha256))
    for t in run.trials:  # older run.json files list no tasks: the lines name them
        if t.task_id not in m.tasks and t.task_sha256:
            entry = (t.task_id, t.task_sha256)
            if entry not in packs.setdefault(t.task_pack, []):
                packs[t.task_pack].append(entry)
    settings = m.settings
    return {
        "label": run.label, "path": str(run.path), "run_id": m.run_id, "started_at": m.started_at,
        "ended_at": m.ended_at, "command": m.command,
        "capplan_version": settings.capplan_version if settings else None,
        "litellm_version": settings.litellm_version if settings else None,
        "trials_per_task": settings.trials if settings else None,
        "max_turns": settings.max_turns if settings else None,
        "user_plan_fingerprint": settings.user_plan_fingerprint if settings else None,
        "plans": [{"column": c.label, "key": c.plan_key, "fingerprint": c.fingerprint,
                   "presets": list(c.effective_presets)} for c in columns if c.run == run.label],
        "packs": [{"pack": pack, "tasks": len(tasks), "digest": _pack_digest(tasks),
                   "files": [{"task": task, "sha256": sha} for task, sha in sorted(tasks)]}
                  for pack, tasks in sorted(packs.items())],
        "spend": {"total_usd": summary.total_cost_usd, "agent_usd": summary.agent_cost_usd,
                  "user_usd": summary.user_cost_usd, "unfinished_usd": summary.unfinished_cost_usd,
                  "unknown_cost_trials": summary.unknown_cost_trials},
        "exit": _exit_status(run),
        "notes": list(run.notes),
    }


def _column_stats(column: Column, run: LoadedRun) -> dict[str, Any]:
    lines = [{**line, "task_pack": "all"} for line in run.lines if line["plan_key"] == column.plan_key]
    rows = summarize(lines).rows if lines else []
    if not rows:
        return {"trials": len(column.trials), "graded": 0, "passed": 0, "pass_rate": None, "ci95": None,
                "pass_hat_k": None, "pass_hat_k_tasks": None, "failed": 0, "error": 0, "aborted": 0,
                "user_failures": 0, "user_failure_rate": None}
    row = rows[0]
    return {"trials": len(column.trials), "graded": row.graded, "passed": row.passed, "pass_rate": row.pass_rate,
            "ci95": list(row.pass_rate_ci95) if row.pass_rate_ci95 else None, "pass_hat_k": row.pass_hat_k,
            "pass_hat_k_tasks": row.pass_hat_k_tasks,
            "failed": row.failed, "error": row.error, "aborted": row.aborted,
            "user_failures": row.user_failures, "user_failure_rate": row.user_failure_rate}


def _detail(trial: TrialResult, shared: _Shared, redact: Callable[[str], str],
            journal: JournalCalls | None = None) -> dict[str, Any]:
    """One trial's detail: what its files hold, in the shape the page renders, unknown fields passed through."""
    problems: list[str] = []
    trajectory: dict[str, Any] | None = None
    metrics: dict[str, Any] | None = None
    try:
        trajectory = trial.trajectory()
    except RunDataError as exc:
        problems.append(exc.render())
    try:
        metrics = trial.metrics(journal)
    except RunDataError as exc:
        problems.append(exc.render())
    if trial.status != "interrupted" and trajectory is None and not problems:
        problems.append(f"{trial.dir}/trajectory.yaml is missing")
    detail: dict[str, Any] = {"problems": problems}
    if trajectory is not None:
        detail["system_prompt"] = shared.ref(trajectory.get("system_prompt"))
        detail["tools"] = shared.ref(trajectory.get("tools"))
        for name in ("messages", "tool_calls", "retries", "summarize_events", "user_reply_guard_events",
                     "termination", "final_state", "checkpoints", "metadata"):
            detail[name] = trajectory.get(name)
        detail["trajectory_other"] = _other(trajectory, _SHOWN_TRAJECTORY)
    if metrics is not None:
        detail["calls"] = metrics.get("calls")
        detail["grade"] = metrics.get("grade")
        detail["metrics_other"] = _other(metrics, _SHOWN_METRICS)
    scrubbed: dict[str, Any] = _scrubbed(detail, redact)
    return scrubbed


def _other(data: dict[str, Any], shown: set[str]) -> dict[str, Any]:
    """The fields the page has no section for (parser errors, value substitutions, fields added later), when set."""
    return {k: v for k, v in data.items() if k not in shown and v is not None and v != [] and v != {}}


def _scrubbed(value: Any, redact: Callable[[str], str]) -> Any:
    """Every string redacted again by value (the files were redacted when written; a view may be shared)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {str(k): _scrubbed(v, redact) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrubbed(v, redact) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # NaN and infinities are not JSON
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return redact(str(value))  # a date or another YAML scalar type: shown as text


def _comparison(runs: list[LoadedRun], columns: list[Column], index_trials: list[list[Any]],
                details: list[dict[str, Any]]) -> dict[str, Any]:
    """The server's comparison data, each flipped trial given its number in the page and each flip its divergence."""
    data = comparison_json(compare(runs), {})
    # the comparison's names are redacted by value: looked up the same way
    numbers = {(redact_text(columns[row[0]].run), redact_text(row[_KEY])): no for no, row in enumerate(index_trials)}
    for pair in data["pairs"]:
        for flip in pair["flips"]:
            a = numbers.get((flip["a"]["run"], flip["a"]["key"]))
            b = numbers.get((flip["b"]["run"], flip["b"]["key"]))
            flip["a"]["no"], flip["b"]["no"] = a, b
            # from the details already built (redacted like the server's): no trajectory is read twice
            flip["diverges_at"] = (None if a is None or b is None
                                   else diverges_at(details[a].get("messages"), details[b].get("messages")))
    return data


def build_payload(runs: list[LoadedRun], *, generated_by: str, from_journal: bool = True) -> Payload:
    """The data of one page for ``runs``.

    ``from_journal``: each trial's calls from its run's ``calls.jsonl`` where the journal accounts
    for them (:meth:`TrialResult.metrics`); False reads every ``metrics.yaml`` whole (the same page).
    """
    columns = columns_of(runs)
    journals = {run.label: journal_calls(run.path) for run in runs} if from_journal else {}
    by_run = {run.label: run for run in runs}
    shared = _Shared()
    tasks: dict[tuple[str, str], int] = {}
    reasons: set[str] = set()
    index_trials: list[list[Any]] = []
    details: list[dict[str, Any]] = []
    for column_no, column in enumerate(columns):
        for trial in column.trials:
            task_no = tasks.setdefault((trial.task_pack, trial.task_id), len(tasks))
            reasons.add(trial.termination_reason)
            # one short array per trial, in the order of TRIAL_FIELDS: the index of 10 000 trials stays small
            index_trials.append([column_no, task_no, trial.index, OUTCOMES.index(trial.outcome),
                                 trial.termination_reason, trial.cost_usd, trial.user_cost_usd, trial.turns,
                                 trial.attempt, trial.key, trial.status, trial.total_tokens])
            details.append(_detail(trial, shared, redact_text, journals.get(trial.run)))
    ordered = sorted(tasks, key=lambda k: k)
    renumber = {tasks[k]: i for i, k in enumerate(ordered)}
    for row in index_trials:
        row[1] = renumber[row[1]]
    index = {
        "comparison": _comparison(runs, columns, index_trials, details) if len(columns) > 1 else None,
        "generated_by": generated_by,
        "outcomes": list(OUTCOMES),
        "runs": [_run_header(run, columns) for run in runs],
        "columns": [{"label": c.label, "run": c.run, "plan_key": c.plan_key, "fingerprint": c.fingerprint,
                     "presets": list(c.effective_presets), "stats": _column_stats(c, by_run[c.run])}
                    for c in columns],
        "tasks": [list(k) for k in ordered],
        "packs": sorted({pack for pack, _ in ordered}),
        "reasons": sorted(reasons),
        "trial_fields": list(TRIAL_FIELDS),
        "trials": index_trials,
        "shared": shared.texts,
    }
    return Payload(index=_scrubbed(index, redact_text), details=details)
