"""A run folder read back as typed trial records: what ``trial report``, ``trial view`` and notebooks use.

The folder is checked exactly as ``trial report`` always checked it (``RunFolder.check``):
every ``runs.jsonl`` line must read back, the latest attempt per trial is the trial's result,
and a damaged folder is a located error. Trials listed as interrupted in ``run.json`` that have
no line are records too (outcome ``interrupted``), so a view shows what did not finish.

A trial's ``trajectory.yaml`` and ``metrics.yaml`` are read only when asked for (a view of
10 000 trials reads them one at a time). They are read through :mod:`capplan.trials.run_folder.confined`
(no link followed, bounded size) and parsed with the safe loader; a file that uses YAML
aliases to expand past :data:`MAX_TRIAL_FILE_NODES` values is refused rather than expanded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from capplan.core.errors import UserError
from capplan.core.reference_mode import reference_mode
from capplan.trials.run_folder import confined
from capplan.trials.run_folder.confined import ConfinedPathError
from capplan.trials.run_folder.records import RunManifest, Summary
from capplan.trials.run_folder.summary import summarize

try:
    _Loader: type[yaml.SafeLoader] = yaml.CSafeLoader
except AttributeError:  # PyYAML built without libyaml
    _Loader = yaml.SafeLoader

#: a trajectory capplan writes is far below this even for long conversations with big tool outputs
MAX_TRIAL_FILE_BYTES = 64 << 20
#: values (after alias expansion) one trial file may hold; a planted alias bomb stops here
MAX_TRIAL_FILE_NODES = 2_000_000
TRIAL_FILES = ("trajectory.yaml", "metrics.yaml")

#: the outcomes a trial is shown with, in the order a legend lists them
OUTCOMES = ("passed", "failed", "error", "aborted", "interrupted", "ungraded")


class RunDataError(UserError):
    """A run folder's file cannot be read back as capplan wrote it."""

    code = "RUN_DATA"


@dataclass(frozen=True)
class TrialResult:
    """One trial of a run, as its ``runs.jsonl`` line records it (the latest attempt)."""

    run: str  # the run's label: its folder name, made unique among the runs loaded
    run_id: str | None
    key: str
    plan_key: str
    plan_fingerprint: str
    effective_preset: str
    user_plan_fingerprint: str | None
    task_id: str
    task_pack: str
    task_sha256: str
    index: int
    attempt: int | None
    status: str
    termination_reason: str
    counts_against_model: bool
    passed: bool | None
    cost_usd: float | None  # None: unknown (a call of unknown cost), never a made-up 0
    user_cost_usd: float | None
    total_tokens: int | None  # None: a call reported no token counts (unknown, never 0)
    user_total_tokens: int | None
    turns: int
    n_calls: int | None
    latency_s: float | None
    dir: str
    root: Path = field(repr=False, compare=False)
    #: where cost_usd / user_cost_usd is None: what the calls of known cost spent (a lower bound)
    cost_known_usd: float | None = None
    user_cost_known_usd: float | None = None

    @property
    def outcome(self) -> str:
        """passed, failed, error, aborted, interrupted, or ungraded (a task without a grader)."""
        if self.status in ("aborted", "interrupted", "error"):
            return self.status
        if self.passed is None:
            return "ungraded"
        return "passed" if self.passed else "failed"

    @property
    def graded(self) -> bool:
        """Whether the trial is in its model's pass-rate denominator (as ``summary.md`` counts it)."""
        return self.counts_against_model and self.passed is not None

    def trajectory(self) -> dict[str, Any] | None:
        """``trajectory.yaml`` as data; None when the trial has none (an interrupted trial)."""
        return self._read("trajectory.yaml")

    def metrics(self, journal: JournalCalls | None = None) -> dict[str, Any] | None:
        """``metrics.yaml`` as data; None when the trial has none.

        With ``journal`` (:func:`journal_calls` of the trial's run), the calls are taken from
        ``calls.jsonl``, where the run journalled them as JSON, and only the rest of ``metrics.yaml``
        is parsed as YAML (the calls are most of it). Where the journal does not account for the
        trial's calls exactly (no ``end`` line, another count, a record that does not validate), the
        whole file is read as without it. Seam *view from the journal*: ``benchmarks/trial_view.py``
        (the reference mode reads the whole file).
        """
        if journal is not None and self.attempt is not None and not reference_mode():
            calls = journal.get((self.key, self.attempt))
            if calls is not None:
                try:
                    rest = read_trial_file(self.root, self.dir, "metrics.yaml", without_calls=len(calls))
                except RunDataError:  # the whole file's read says where
                    rest = None
                if rest is not None and "calls" not in rest and rest.get("n_calls") == len(calls) \
                        and not rest.get("lost_attempts"):
                    merged = _with_calls(rest, calls)
                    if merged is not None:
                        return merged
        return self._read("metrics.yaml")

    def _read(self, name: str) -> dict[str, Any] | None:
        if self.status == "interrupted" and self.attempt is None:
            return None
        return read_trial_file(self.root, self.dir, name)

    def as_row(self) -> dict[str, Any]:
        """The record as a flat dict (what ``to_pandas`` and the CSV export hold), with its outcome."""
        row = {k: v for k, v in asdict(self).items() if k != "root"}
        row["outcome"] = self.outcome
        return row


@dataclass(frozen=True)
class LoadedRun:
    """A run folder: its ``run.json``, its trials, and their summary."""

    path: Path
    label: str
    manifest: RunManifest
    trials: tuple[TrialResult, ...]
    lines: tuple[dict[str, Any], ...] = field(repr=False)
    notes: tuple[str, ...] = ()
    #: spent but in no trial's row: interrupted trials, trials that died in flight, superseded attempts
    unfinished_spent_usd: float = 0.0

    @property
    def run_id(self) -> str | None:
        return self.manifest.run_id

    @property
    def plans(self) -> dict[str, str]:
        """Model key -> plan fingerprint, as ``run.json`` records them."""
        return dict(self.manifest.plans)

    def summary(self) -> Summary:
        """What ``summary.json`` holds, computed from the trials' lines."""
        return summarize(list(self.lines), unfinished_cost_usd=self.unfinished_spent_usd)

    def to_pandas(self) -> Any:
        """The trials as a ``pandas.DataFrame``, one row per trial (pandas must be installed; it is not a dependency)."""
        try:
            import pandas
        except ImportError:
            raise RunDataError("to_pandas() needs pandas, which capplan does not install",
                               hint="pip install pandas (or use .trials, a tuple of typed records)") from None
        return pandas.DataFrame([t.as_row() for t in self.trials], columns=_COLUMNS)

    def __iter__(self) -> Iterator[TrialResult]:
        return iter(self.trials)

    def __len__(self) -> int:
        return len(self.trials)


_COLUMNS = [f for f in TrialResult.__dataclass_fields__ if f != "root"] + ["outcome"]


def load_run(path: Path | str, *, label: str | None = None, notify: Callable[[str], None] | None = None) -> LoadedRun:
    """Read the run folder at ``path`` (checked as ``trial report`` checks it; a damaged one raises a located error)."""
    from capplan.trials.run_folder.folder import MANIFEST_FILE, RunFolder, RunFolderError

    root = Path(path)
    folder = RunFolder(root, notify=notify)
    folder.check(report=True)
    try:
        raw = confined.read_bytes(root, (MANIFEST_FILE,), limit=16 << 20)
    except ConfinedPathError as exc:  # the folder changed since it was checked
        raise RunFolderError([exc.diagnostic()]) from None
    manifest = RunManifest.model_validate_json(raw) if raw is not None else RunManifest()
    lines = folder.finished()
    name = label if label is not None else (root.resolve().name or str(root))
    trials = [_from_line(name, root, line) for line in lines.values()]
    for key in manifest.interrupted:
        if key not in lines:
            trials.append(_interrupted(name, root, key, manifest))
    trials.sort(key=lambda t: (t.plan_key, t.task_pack, t.task_id, t.index))
    # the same amount summary.json counts apart (its rows hold finished trials only)
    unfinished = folder.unfinished_spent_usd() + folder.superseded_spent_usd()
    return LoadedRun(path=root, label=name, manifest=manifest, trials=tuple(trials),
                     lines=tuple(lines.values()), notes=tuple(folder.notes), unfinished_spent_usd=unfinished)


def load_runs(paths: list[Path], notify: Callable[[str], None] | None = None) -> list[LoadedRun]:
    """Several run folders, each labelled by its folder name (``name#2``… when two share one)."""
    runs: list[LoadedRun] = []
    seen: dict[str, int] = {}
    for path in paths:
        base = Path(path).resolve().name or str(path)
        seen[base] = seen.get(base, 0) + 1
        runs.append(load_run(path, label=base if seen[base] == 1 else f"{base}#{seen[base]}", notify=notify))
    return runs


def _from_line(run: str, root: Path, line: dict[str, Any]) -> TrialResult:
    return TrialResult(
        run=run, run_id=line.get("run_id"), key=line["key"], plan_key=line["plan_key"],
        plan_fingerprint=line["plan_fingerprint"], effective_preset=line["effective_preset"],
        user_plan_fingerprint=line.get("user_plan_fingerprint"), task_id=line["task_id"],
        task_pack=line["task_pack"], task_sha256=line["task_sha256"], index=line["index"],
        attempt=line.get("attempt") or 1, status=line["status"], termination_reason=line["termination_reason"],
        counts_against_model=line["counts_against_model"], passed=line["passed"], cost_usd=line["cost_usd"],
        user_cost_usd=line.get("user_cost_usd"), total_tokens=line["total_tokens"],
        user_total_tokens=line.get("user_total_tokens"), turns=line["turns"], n_calls=line.get("n_calls"),
        latency_s=line.get("latency_s"), dir=line["dir"], root=root, cost_known_usd=line.get("cost_known_usd"),
        user_cost_known_usd=line.get("user_cost_known_usd"))


def _interrupted(run: str, root: Path, key: str, manifest: RunManifest) -> TrialResult:
    plan_key, task_id, index = key.split("/")  # RunManifest checked the shape and the names
    task = manifest.tasks.get(task_id)
    return TrialResult(
        run=run, run_id=manifest.run_id, key=key, plan_key=plan_key,
        plan_fingerprint=manifest.plans.get(plan_key, ""), effective_preset="",
        user_plan_fingerprint=manifest.settings.user_plan_fingerprint if manifest.settings else None,
        task_id=task_id, task_pack=task.pack if task else "", task_sha256=task.sha256 if task else "",
        index=int(index), attempt=None, status="interrupted", termination_reason="interrupted",
        counts_against_model=False, passed=None, cost_usd=None, user_cost_usd=None, total_tokens=None,
        user_total_tokens=None, turns=0, n_calls=None, latency_s=None, dir=f"trials/{key}", root=root)


#: (trial key, runs.jsonl attempt) -> that attempt's calls, as ``calls.jsonl`` journalled them
JournalCalls = Mapping[tuple[str, int], list[dict[str, Any]]]


def journal_calls(root: Path) -> JournalCalls:
    """Each finished attempt's calls from ``root/calls.jsonl``: the attempts one execution ended ``as: written``.

    An attempt two executions claim, or a journal line that does not read back, leaves the
    trial to its ``metrics.yaml`` (an attempt missing here is read from there).
    """
    from capplan.trials.run_folder.call_journal import read_journal

    found: list[Any] = []
    journal = read_journal(root, found)
    out: dict[tuple[str, int], list[dict[str, Any]]] = {}
    claimed: set[tuple[str, int]] = set()
    for execution in journal.executions.values():
        if not any(end.get("as") == "written" for end in execution.ends):
            continue  # died in flight or interrupted: its calls are in no metrics.yaml
        identity = (execution.key, execution.attempt)
        if identity in claimed:
            out.pop(identity, None)
            continue
        claimed.add(identity)
        out[identity] = [call for _, call in execution.calls]
    return out if not found else {}


def _with_calls(rest: dict[str, Any], calls: list[dict[str, Any]]) -> dict[str, Any] | None:
    """``metrics.yaml``'s data with the journal's calls put back, in the shape the file holds them."""
    from pydantic import ValidationError

    from capplan.trials.run_folder.records import CallRecord

    try:
        records = [CallRecord.model_validate(call).model_dump(mode="json") for call in calls]
    except ValidationError:
        return None
    out: dict[str, Any] = {}
    for key, value in rest.items():
        out[key] = value
        if key == "n_calls":  # where the file holds them
            out["calls"] = records
    out.setdefault("calls", records)
    return out


def _cut_calls(raw: bytes, items: int) -> bytes | None:
    """``metrics.yaml`` without its top-level ``calls:`` block of ``items`` calls; None when it does not hold that.

    capplan writes the block as a ``calls:`` line at column 0 and each call as a ``- `` line at
    column 0 followed by indented lines; the next line starting with another character is the
    next key. A file laid out otherwise, or holding another number of calls (an edited file), is
    None: the caller reads it whole.
    """
    start = raw.find(b"\ncalls:\n")
    if start < 0 or raw.find(b"\ncalls:", start + 1) >= 0:
        return None
    end = start + len(b"\ncalls:\n")
    found = 0
    while end < len(raw) and raw[end:end + 1] in (b"-", b" ", b"\n"):
        found += raw[end:end + 2] == b"- "
        newline = raw.find(b"\n", end)
        end = len(raw) if newline < 0 else newline + 1
    return raw[:start + 1] + raw[end:] if found == items else None


def read_trial_file(root: Path, trial_dir: str, name: str, *, without_calls: int | None = None
                    ) -> dict[str, Any] | None:
    """One trial file as data; None when it does not exist; :class:`RunDataError` when it does not read back.

    ``without_calls`` (a number of calls): the file's data but its top-level ``calls``, which must
    hold that many (see :func:`_cut_calls`); None also when they cannot be left out so.
    """
    parts = (*trial_dir.split("/"), name)
    shown = f"{root / trial_dir / name}"
    try:
        raw = confined.read_bytes(root, parts, limit=MAX_TRIAL_FILE_BYTES)
    except ConfinedPathError as exc:
        raise RunDataError(exc.diagnostic().message, location=shown,
                           hint="the run folder changed after capplan wrote it; re-run the trial into a new --out") \
            from None
    if raw is None:
        return None
    if without_calls is not None:
        raw = _cut_calls(raw, without_calls)
        if raw is None:
            return None
    try:
        data = yaml.load(raw, Loader=yaml.SafeLoader if reference_mode() else _Loader)  # noqa: S506 - libyaml: speed only
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{shown}:{mark.line + 1}:{mark.column + 1}" if mark is not None else shown
        raise RunDataError(f"is not valid YAML: {getattr(exc, 'problem', None) or 'unreadable'}", location=where,
                           hint="the file was not written by capplan, or was edited; re-run the trial") from None
    if not isinstance(data, dict):
        raise RunDataError(f"must be a mapping, not {type(data).__name__}", location=shown,
                           hint="the file was not written by capplan, or was edited; re-run the trial")
    if _count_nodes(data, MAX_TRIAL_FILE_NODES) > MAX_TRIAL_FILE_NODES:
        raise RunDataError(f"expands to more than {MAX_TRIAL_FILE_NODES} values (YAML aliases)", location=shown,
                           hint="capplan never writes such a file; it was planted or edited")
    return data


def _count_nodes(value: Any, budget: int) -> int:
    """Values reachable from ``value`` counting every alias use again, stopping once past ``budget``."""
    count = 0
    stack = [value]
    while stack:
        item = stack.pop()
        count += 1
        if count > budget:
            return count
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return count
