"""Several runs side by side: one column per (run, plan), joined on (task id, trial index).

A column is one plan of one run, shown with its fingerprint; it is labelled by its model key,
or ``run/model`` when two columns share a model key (the same model in two runs). Group
statistics (pass rate, 95 % Wilson interval, pass^k, counts, cost) come from
:func:`capplan.trials.run_folder.summary.summarize`, the function ``summary.md`` is made from, run over
one column's trials with the group as the row, so a report and a summary never disagree.

Each column after the first is compared with the first over the pairs where both are graded
(the exact McNemar test, :mod:`capplan.trials.report.stats`). A task whose file differs
between two columns' runs (another sha256) is noted: its pairs still count, but the note says
the comparison is not of like with like.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Literal

from capplan.trials.run_folder.records import SummaryRow
from capplan.trials.report.run_data import LoadedRun, TrialResult
from capplan.trials.report.stats import PairedComparison, compare_pairs
from capplan.trials.run_folder.summary import summarize

GroupBy = Literal["model", "task", "pack"]
GROUP_BY: tuple[GroupBy, ...] = ("model", "task", "pack")


@dataclass(frozen=True)
class Column:
    """One plan of one run."""

    label: str
    run: str
    run_id: str | None
    plan_key: str
    fingerprint: str
    effective_presets: tuple[str, ...]
    trials: tuple[TrialResult, ...] = field(repr=False)


@dataclass(frozen=True)
class GroupRow:
    """One column's statistics over one group (all its trials, a task, or a task pack)."""

    group: str
    column: str
    stats: SummaryRow


@dataclass(frozen=True)
class Comparison:
    """What a report holds, whatever its format."""

    runs: tuple[LoadedRun, ...]
    columns: tuple[Column, ...]
    by: GroupBy
    groups: tuple[GroupRow, ...]
    #: (task pack, task id) -> column label -> that column's trials of the task
    matrix: dict[tuple[str, str], dict[str, list[TrialResult]]]
    pairs: tuple[PairedComparison, ...]
    notes: tuple[str, ...]


def columns_of(runs: list[LoadedRun]) -> list[Column]:
    """One column per (run, plan key), in run order then model order."""
    raw: list[tuple[LoadedRun, str, list[TrialResult]]] = []
    for run in runs:
        per_plan: dict[str, list[TrialResult]] = defaultdict(list)
        for trial in run.trials:
            per_plan[trial.plan_key].append(trial)
        for key in sorted(set(per_plan) | set(run.plans)):
            raw.append((run, key, per_plan.get(key, [])))
    keys = [key for _, key, _ in raw]
    out = []
    for run, key, trials in raw:
        fingerprint = run.plans.get(key) or next((t.plan_fingerprint for t in trials if t.plan_fingerprint), "")
        presets = tuple(sorted({t.effective_preset for t in trials if t.effective_preset}))
        label = key if keys.count(key) == 1 else f"{run.label}/{key}"
        out.append(Column(label=label, run=run.label, run_id=run.run_id, plan_key=key, fingerprint=fingerprint,
                          effective_presets=presets, trials=tuple(trials)))
    return out


def _group_of(line: dict[str, object], by: GroupBy) -> str:
    if by == "task":
        return str(line["task_id"])
    if by == "pack":
        return str(line["task_pack"])
    return "all tasks"


def _group_rows(column: Column, by: GroupBy, runs: dict[str, LoadedRun]) -> list[GroupRow]:
    lines = [line for line in runs[column.run].lines if line["plan_key"] == column.plan_key]
    if not lines:
        return []
    # summarize() groups by (plan key, task pack): the group stands in for the pack, one column at a time
    grouped = [{**line, "task_pack": _group_of(line, by)} for line in lines]
    return [GroupRow(group=row.task_pack, column=column.label, stats=row) for row in summarize(grouped).rows]


def compare(runs: list[LoadedRun], by: GroupBy = "model") -> Comparison:
    """The report of ``runs``: columns, group statistics, the per-task matrix and the paired comparisons."""
    columns = columns_of(runs)
    by_label = {run.label: run for run in runs}
    groups: list[GroupRow] = []
    for column in columns:
        groups += _group_rows(column, by, by_label)
    if by != "model":
        groups.sort(key=lambda g: (g.group, [c.label for c in columns].index(g.column)))
    matrix: dict[tuple[str, str], dict[str, list[TrialResult]]] = defaultdict(lambda: defaultdict(list))
    for column in columns:
        for trial in column.trials:
            matrix[(trial.task_pack, trial.task_id)][column.label].append(trial)
    notes = [note for run in runs for note in run.notes]
    notes += _task_file_notes(columns)
    pairs = tuple(_paired(columns[0], other) for other in columns[1:]) if len(columns) > 1 else ()
    return Comparison(runs=tuple(runs), columns=tuple(columns), by=by, groups=tuple(groups),
                      matrix={k: dict(v) for k, v in sorted(matrix.items())}, pairs=pairs, notes=tuple(notes))


def _paired(a: Column, b: Column) -> PairedComparison:
    """B against A on every (task id, trial index) both graded."""
    graded_a = {(t.task_id, t.index): bool(t.passed) for t in a.trials if t.graded}
    graded_b = {(t.task_id, t.index): bool(t.passed) for t in b.trials if t.graded}
    common = sorted(set(graded_a) & set(graded_b))
    return compare_pairs(a.label, b.label, [(graded_a[k], graded_b[k]) for k in common],
                         one_trial_per_task=all(index == 0 for _, index in common))


def _task_file_notes(columns: list[Column]) -> list[str]:
    digests: dict[str, set[str]] = defaultdict(set)
    for column in columns:
        for trial in column.trials:
            if trial.task_sha256:
                digests[trial.task_id].add(trial.task_sha256)
    return [f"task {task} was run from {len(found)} different task files (sha256 differs between runs): its pairs "
            "compare different tasks" for task, found in sorted(digests.items()) if len(found) > 1]
