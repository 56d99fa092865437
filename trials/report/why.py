"""Comparisons that say why: the paired verdicts, what each model spent, the tasks that flipped, where two talks part.

- the paired exact McNemar verdict of every column after the first against the first, the very
  line ``trial report`` prints (:meth:`PairedComparison.verdict`, made plain the same way);
- per column: trials, pass rate, cost (a lower bound when some trials' cost is unknown, with how
  many), tokens and latency (mean and median over the trials where they are known);
- per pair, the (task, trial index) pairs both graded where one passed and the other did not;
- for one such pair, the two conversations side by side, each message reduced to what was said
  (role, text, tool calls with their arguments, tool results), and the first message where the
  two differ.

Every recorded text is redacted again by value, as the static view does, and bounded in size.

Both pages use it: the server answers its comparison page with :func:`comparison_json` and
:func:`side_by_side`; the static ``trial view`` embeds :func:`comparison_json` and, for each
flip, where the two conversations part (:func:`diverges_at`), drawing both from the trial
details it already holds.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from typing import Any

from capplan.core.redaction import redact_text
from capplan.trials.report.compare import Column, Comparison
from capplan.trials.report.run_data import RunDataError, TrialResult
from capplan.trials.safe_text import plain

#: the flips listed per pair, and the characters of one message's text a side-by-side view carries
MAX_FLIPS = 1_000
MAX_MESSAGE_CHARS = 100_000
MAX_MESSAGES = 2_000


def _known(values: Sequence[float | int | None]) -> list[float]:
    return [float(v) for v in values if v is not None]


def _spread(values: Sequence[float | int | None]) -> dict[str, Any]:
    known = _known(values)
    return {"mean": statistics.fmean(known) if known else None, "median": statistics.median(known) if known else None,
            "total": sum(known) if known else None, "unknown": len(values) - len(known)}


def column_figures(column: Column) -> dict[str, Any]:
    """One column's pass rate, cost, tokens and latency: what the CLI report lists per model, on the page."""
    trials = column.trials
    graded = [t for t in trials if t.graded]
    passed = sum(1 for t in graded if t.passed)
    costs: list[float | None] = []
    for t in trials:
        costs.append(None if t.cost_usd is None or (t.user_total_tokens and t.user_cost_usd is None)
                     else t.cost_usd + (t.user_cost_usd or 0.0))
    return {"label": column.label, "run": column.run, "model": column.plan_key, "fingerprint": column.fingerprint,
            "trials": len(trials), "graded": len(graded), "passed": passed,
            "pass_rate": passed / len(graded) if graded else None,
            "cost_usd": _spread(costs), "tokens": _spread([t.total_tokens for t in trials]),
            "latency_s": _spread([t.latency_s for t in trials]), "turns": _spread([t.turns for t in trials])}


def _trial_ref(trial: TrialResult) -> dict[str, Any]:
    return {"run": trial.run, "key": trial.key, "outcome": trial.outcome, "turns": trial.turns,
            "cost_usd": trial.cost_usd, "termination": trial.termination_reason}


def flips(a: Column, b: Column) -> list[dict[str, Any]]:
    """The (task, trial index) pairs both graded where exactly one of ``a`` and ``b`` passed."""
    graded_a = {(t.task_id, t.index): t for t in a.trials if t.graded}
    graded_b = {(t.task_id, t.index): t for t in b.trials if t.graded}
    out = []
    for task_index in sorted(set(graded_a) & set(graded_b)):
        ta, tb = graded_a[task_index], graded_b[task_index]
        if bool(ta.passed) != bool(tb.passed):
            out.append({"task": ta.task_id, "pack": ta.task_pack, "index": ta.index,
                        "passed": b.label if tb.passed else a.label, "a": _trial_ref(ta), "b": _trial_ref(tb)})
            if len(out) >= MAX_FLIPS:
                break
    return out


def comparison_json(comparison: Comparison, names: dict[str, str]) -> dict[str, Any]:
    """The comparison page's data; ``names``: run label -> the run's name in the served folder."""
    columns = comparison.columns
    pairs = []
    for other, pair in zip(columns[1:], comparison.pairs, strict=True):
        pairs.append({"a": columns[0].label, "b": other.label, "verdict": plain(pair.verdict()),
                      "json": pair.as_json(), "flips": flips(columns[0], other)})
    data = {"runs": [{"label": run.label, "name": names.get(run.label, run.label)} for run in comparison.runs],
            "columns": [column_figures(c) for c in columns], "pairs": pairs, "notes": [plain(n) for n in comparison.notes]}
    scrubbed: dict[str, Any] = _scrub(data)
    return scrubbed


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {str(k): _scrub(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrub(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None  # not JSON; a mean of nothing is None already
    return value


def _text(value: Any) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    if len(text) > MAX_MESSAGE_CHARS:
        return text[:MAX_MESSAGE_CHARS] + f"\n… ({len(text) - MAX_MESSAGE_CHARS} more characters in the trial's file)"
    return text


def _arguments(raw: Any) -> str:
    if isinstance(raw, str):
        try:
            return json.dumps(json.loads(raw), ensure_ascii=False, sort_keys=True)
        except ValueError:
            return raw
    return _text(raw)


def said(message: Any) -> dict[str, Any]:
    """One recorded message reduced to what was said: role, origin, text and tool calls."""
    if not isinstance(message, dict):
        return {"role": "unknown", "origin": None, "text": _text(message), "calls": []}
    calls = []
    for call in message.get("tool_calls") or []:
        fn = call.get("function") if isinstance(call, dict) else None
        fn = fn if isinstance(fn, dict) else {}
        calls.append({"name": _text(fn.get("name")), "arguments": _arguments(fn.get("arguments"))})
    role = message.get("role")
    origin = message.get("origin")
    return {"role": role if isinstance(role, str) else "unknown", "origin": origin if isinstance(origin, str) else None,
            "text": _text(message.get("content")), "calls": calls}


def first_divergence(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> int | None:
    """The index of the first message that differs (in role, text or tool calls); None when the two are the same."""
    for at, (x, y) in enumerate(zip(a, b, strict=False)):
        if (x["role"], x["text"], x["calls"]) != (y["role"], y["text"], y["calls"]):
            return at
    return None if len(a) == len(b) else min(len(a), len(b))


def diverges_at(a: Any, b: Any) -> int | None:
    """The first message where two recorded message lists differ, as :func:`said` sees them; None when the same.

    A value that is not a list (no conversation recorded) counts as no message.
    """
    def messages(value: Any) -> list[dict[str, Any]]:
        return [said(m) for m in value[:MAX_MESSAGES]] if isinstance(value, list) else []

    return first_divergence(messages(a), messages(b))


def conversation(trial: TrialResult) -> tuple[list[dict[str, Any]], str | None]:
    """``trial``'s messages as :func:`said` reduces them, and a problem when its trajectory does not read back."""
    try:
        trajectory = trial.trajectory()
    except RunDataError as exc:
        return [], exc.render()
    if trajectory is None:
        return [], "this trial has no recorded conversation"
    messages = trajectory.get("messages")
    if not isinstance(messages, list):
        return [], "the trajectory holds no message list"
    return [said(m) for m in messages[:MAX_MESSAGES]], None


def side_by_side(a: TrialResult, b: TrialResult) -> dict[str, Any]:
    """Two trials' conversations and the first message where they part."""
    messages_a, problem_a = conversation(a)
    messages_b, problem_b = conversation(b)
    data = {"a": {**_trial_ref(a), "task": a.task_id, "model": a.plan_key, "messages": messages_a, "problem": problem_a},
            "b": {**_trial_ref(b), "task": b.task_id, "model": b.plan_key, "messages": messages_b, "problem": problem_b},
            "diverges_at": first_divergence(messages_a, messages_b)}
    scrubbed: dict[str, Any] = _scrub(data)
    return scrubbed
