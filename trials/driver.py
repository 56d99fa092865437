"""The driver: specs from the command line, a backend to run them, the run folder to keep them.

It validates everything before the first call (plans verified, every task file linted
against its environment, llm-user tasks need a user plan), skips what the run folder already
finished, feeds the backend lazily so the budget stop (``--max-cost``, checked before every send:
see :mod:`capplan.trials.run_folder.budget`) can end the feed, and
writes each record as it arrives. The first Ctrl-C stops the feed and lets running trials end
at their next turn as ``interrupted`` (they rerun on resume); a second one exits at once.
"""

from __future__ import annotations

import signal
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capplan.core.diagnostics import Diagnostic, InputError
from capplan.executor.plan import Plan
from capplan.executor.probe import RateLimitProbeConfig
from capplan.core.young_collections import young_collections_spaced
from capplan.trials.backends import Backend
from capplan.trials.run_folder.budget import Budget
from capplan.trials.outcome import TerminationReason, TrialStatus, counts_against_model, status_for
from capplan.executor.probe_stats import ProbeStats
from capplan.trials.run_folder.probe_census import load_census, write_census
from capplan.trials.report.progress import Progress
from capplan.trials.run_folder.records import RunSettings
from capplan.trials.run_folder.render_process import MIN_TRIALS as RENDER_MIN_TRIALS
from capplan.trials.run_folder.render_process import RecordRenderer
from capplan.trials.usage_problem import UsageProblem
from capplan.trials.run_folder.folder import RunFolder
from capplan.trials.run_folder.run_identity import build_settings, relative_name
from capplan.trials.spec import TrialKey, TrialRecords, TrialSpec
from capplan.trials.run_folder.summary import render_json, render_markdown, summarize
from capplan.trials.run_folder.confined import ConfinedPathError, atomic_write
from capplan.trials.tasks.loading import LoadedTask, load_task, resolve_function


@dataclass(frozen=True)
class RunRequest:
    """What ``capplan trial run`` was asked to do."""

    tasks: Sequence[Path]
    plans: Sequence[Path]
    out: Path
    user_plan: Path | None = None
    trials: int = 1
    concurrency: int = 4
    max_turns: int | None = None
    max_cost: float | None = None
    api_base: str | None = None
    user_api_base: str | None = None
    rate_limit_probe: RateLimitProbeConfig | None = None
    run_config: Path | None = None  # --config: its digest is part of the run's identity
    #: the run config's ``trials:`` choices that are set, as plain data; each wins over the task's own
    trial_choices: dict[str, Any] | None = None
    judge_plan: Path | None = None  # --judge-plan: the model a grader's ``judge`` asks
    judge_api_base: str | None = None


@dataclass
class RunOutcome:
    """What the drive did, for the exit code and the closing line."""

    finished: int = 0
    skipped: int = 0
    interrupted: list[TrialKey] = field(default_factory=list)
    not_started: list[TrialKey] = field(default_factory=list)
    budget_stopped: bool = False
    spent_usd: float = 0.0
    #: trial key -> what an interrupted trial had spent (None: unknown); run.json keeps it
    interrupted_spend: dict[str, float | None] = field(default_factory=dict)
    #: for an interrupted trial whose spend is unknown (a call was sent and never priced): its known part
    interrupted_known: dict[str, float] = field(default_factory=dict)
    #: Set when a trial ended ``configuration_error``: the run stopped there (its one-line reason).
    configuration_error: str | None = None
    #: The plan keys whose configuration failed (None: every plan's, as when the shared user plan failed).
    failing_plans: frozenset[str] | None = frozenset()


def load_tasks(paths: Sequence[Path]) -> list[LoadedTask]:
    """Every task file, validated; all problems in all files are raised together."""
    loaded: list[LoadedTask] = []
    diags: list[Diagnostic] = []
    for path in paths:
        try:
            loaded.append(load_task(path))
        except InputError as exc:
            diags += exc.diagnostics
    if diags:
        raise InputError(diags)
    seen: dict[str, Path] = {}
    for task in loaded:
        if task.task.id in seen:
            diags.append(Diagnostic(str(task.path), 1, 1, "duplicate-task-id",
                                    f"task id {task.task.id!r} is also used by {seen[task.task.id]}"))
        seen[task.task.id] = task.path
    if diags:
        raise InputError(diags)
    return loaded


def build_run(request: RunRequest) -> tuple[list[TrialSpec], RunSettings]:
    """The specs, and the run's identity beyond plans and task files (``run.json`` settings)."""
    specs = build_specs(request)
    return specs, build_settings(specs, request.run_config)


def build_specs(request: RunRequest) -> list[TrialSpec]:
    """One spec per plan × task × trial index, in a stable order."""
    if request.trials < 1 or request.concurrency < 1:
        raise UsageProblem("--trials and --concurrency must be at least 1")
    plans = [Plan.load(p) for p in request.plans]
    keys = [p.model.key for p in plans]
    dupes = sorted({k for k in keys if keys.count(k) > 1})
    if dupes:
        raise UsageProblem(f"two --plan files are for the same model key: {', '.join(dupes)}")
    user_plan = Plan.load(request.user_plan) if request.user_plan else None
    tasks = load_tasks(request.tasks)
    needs_user = [t.task.id for t in tasks if t.task.user.mode == "llm"]
    if needs_user and user_plan is None:
        raise UsageProblem(f"task(s) {', '.join(needs_user)} have an llm user: pass --user-plan PLAN "
                           "(the user simulator's model)")
    judge_plan = Plan.load(request.judge_plan) if request.judge_plan else None
    if judge_plan is None:
        _refuse_unjudged(tasks)
    probe = request.rate_limit_probe.model_dump(mode="json") if request.rate_limit_probe is not None else None
    _check_choices(request, tasks)
    names = {task.path: relative_name(task.path) for task in tasks}
    specs = []
    for plan in plans:
        text = plan.to_bytes().decode("utf-8")
        for task in tasks:
            for index in range(request.trials):
                specs.append(TrialSpec(
                    plan_json=text, plan_fingerprint=plan.fingerprint, plan_key=plan.model.key,
                    task_path=str(task.path.resolve()), task_text=task.text, task_id=task.task.id,
                    task_pack=task.pack, index=index, task_name=names[task.path],
                    user_plan_json=user_plan.to_bytes().decode("utf-8") if user_plan else None,
                    user_plan_fingerprint=user_plan.fingerprint if user_plan else None,
                    max_turns_cap=request.max_turns, api_base=request.api_base, user_api_base=request.user_api_base,
                    rate_limit_probe=probe, trial_choices=request.trial_choices or None,
                    judge_plan_json=judge_plan.to_bytes().decode("utf-8") if judge_plan else None,
                    judge_plan_fingerprint=judge_plan.fingerprint if judge_plan else None,
                    judge_api_base=request.judge_api_base,
                ))
    return specs


def _refuse_unjudged(tasks: Sequence[LoadedTask]) -> None:
    """Without --judge-plan, a task whose grader needs a judge model is refused before anything is sent.

    A grader function says so through a ``needs_judge(metadata) -> reason | None`` attribute (τ²'s evaluator
    does, for a task rewarded on NL_ASSERTION); the function is imported here, as the run imports it anyway.
    """
    diags = []
    for loaded in tasks:
        grader = loaded.task.grader
        ref = grader.function_ref if grader is not None else None
        if ref is None:
            continue
        try:
            fn = resolve_function(ref.ref, loaded.task.folder, loaded.task.requires)
        except LookupError:
            continue  # the trial records the grader that cannot load, as it does without a judge
        asks = getattr(fn, "needs_judge", None)
        reason = asks(loaded.task.metadata) if callable(asks) else None
        if reason:
            diags.append(Diagnostic(str(loaded.path), 1, 1, "judge-plan-required",
                                    f"task {loaded.task.id!r} needs a judge model: {reason}", path="grader.function",
                                    hint="pass --judge-plan PLAN (the judge model's compiled plan)"))
    if diags:
        raise InputError(diags)


def _check_choices(request: RunRequest, tasks: Sequence[LoadedTask]) -> None:
    """A run-wide named tool_choice must name a tool every task declares (else its requests could not be built)."""
    choice = (request.trial_choices or {}).get("tool_choice")
    if not isinstance(choice, dict):
        return
    missing = [t.task.id for t in tasks if t.task.tool(str(choice.get("name"))) is None]
    if missing:
        where = f"{request.run_config}: " if request.run_config is not None else ""
        raise UsageProblem(f"{where}trials.tool_choice names tool {choice.get('name')!r}, which task(s) "
                           f"{', '.join(missing)} do not declare; name a tool every task has, or set it per task")


def drive(specs: list[TrialSpec], folder: RunFolder, backend: Backend, *, concurrency: int,
          max_cost: float | None, progress: Progress, retry_aborted: bool = False,
          rate_limit_probe: RateLimitProbeConfig | None = None, settings: RunSettings | None = None,
          command: Sequence[str] | None = None, resample_user: int = 0) -> RunOutcome:
    """Run what is not finished yet, writing each trial as it finishes.

    With an enabled ``rate_limit_probe`` the trials' probe censuses are summed into the run
    folder's ``probe.json`` (see :mod:`capplan.trials.run_folder.probe_census`) when the drive ends, however it ends.

    ``retry_aborted`` also runs again the trials whose latest line is ``aborted`` (a rate
    limit, timeout or infrastructure failure, which says nothing about the model); the new
    line is appended and supersedes the aborted one wherever lines are read per trial.

    ``resample_user`` (``trial run --resample-user N``): once every trial has run, a trial whose
    latest attempt ended with a broken user simulator (``user_simulator_failure``) runs again
    with a fresh user sample, as a new attempt that supersedes it, at most N times; each round
    is an invocation of its own in ``run.json``, and the budget counts every attempt.
    """
    try:  # the folder's writer lock, taken by open(), is held until the drive ends, however it ends
        outcome = _drive(specs, folder, backend, concurrency=concurrency, max_cost=max_cost, progress=progress,
                         retry_aborted=retry_aborted, rate_limit_probe=rate_limit_probe, settings=settings,
                         command=command)
        for _ in range(resample_user):
            if outcome.interrupted or outcome.not_started or outcome.budget_stopped or outcome.configuration_error:
                break  # a stopped run resumes first; resampling is for a run that ran to its end
            broken = user_simulator_broken(folder, specs)
            if not broken:
                break
            progress.note(f"resampling the user simulator of {len(broken)} trial(s) whose user broke "
                          f"({', '.join(sorted(broken)[:3])}{', …' if len(broken) > 3 else ''})")
            again = _drive(specs, folder, backend, concurrency=concurrency, max_cost=max_cost, progress=progress,
                           retry_aborted=False, rate_limit_probe=rate_limit_probe, settings=settings,
                           command=command, rerun=broken)
            again.finished += outcome.finished
            again.skipped = outcome.skipped
            outcome = again
        return outcome
    finally:
        folder.release()


def user_simulator_broken(folder: RunFolder, specs: Sequence[TrialSpec]) -> frozenset[str]:
    """The trials of ``specs`` whose latest attempt's user simulator broke (their line says how)."""
    keys = {str(s.key) for s in specs}
    return frozenset(key for key, line in folder.finished().items() if key in keys and line.get("user_simulator_failure"))


def _drive(specs: list[TrialSpec], folder: RunFolder, backend: Backend, *, concurrency: int,
           max_cost: float | None, progress: Progress, retry_aborted: bool,
           rate_limit_probe: RateLimitProbeConfig | None, settings: RunSettings | None,
           command: Sequence[str] | None, rerun: frozenset[str] = frozenset()) -> RunOutcome:
    # the identity is part of every run folder, however the drive was started (``settings`` adds the run config)
    finished = folder.open(specs, settings=settings or build_settings(specs), command=command)
    attach_journal = getattr(backend, "attach_journal", None)  # every built-in backend has it (calls.jsonl)
    if attach_journal is not None:
        attach_journal(folder.journal)
    probe = rate_limit_probe if rate_limit_probe is not None and rate_limit_probe.enabled else None
    try:
        census = load_census(folder.root, probe) if probe is not None else None
    except ValueError as exc:
        raise UsageProblem(str(exc)) from exc
    again = {key for key, line in finished.items() if retry_aborted and line["status"] == TrialStatus.ABORTED.value}
    again |= rerun & finished.keys()
    todo = [s for s in specs if str(s.key) not in finished or str(s.key) in again]
    # the budget counts every attempt, superseded ones included: that money was spent
    outcome = RunOutcome(skipped=len(specs) - len(todo), spent_usd=folder.spent_usd() + folder.unfinished_spent_usd())
    stop = threading.Event()
    # sends that died unanswered may have been billed: the budget counts the worst case they reserved
    budget = Budget(max_cost, outcome.spent_usd + folder.unanswered_reserved_usd(), stop) \
        if max_cost is not None else None
    if folder.journal is not None:
        folder.journal.budget = budget
    started: set[str] = set()
    if todo:
        backend.prepare(todo, concurrency=concurrency)
    progress.begin(total=len(specs), already=outcome.skipped, spent=outcome.spent_usd,
                   again=len(again & {str(s.key) for s in specs}))

    def feed() -> Iterator[TrialSpec]:
        for spec in todo:
            if outcome.configuration_error is not None:
                return  # every further trial would make the same refused call
            if budget is not None and (budget.reached or budget.exhausted()):
                outcome.budget_stopped = True
                return
            started.add(str(spec.key))
            progress.started(spec.key)
            yield spec

    done_keys: set[str] = set()
    writer = _Writer(folder, progress, trials=len(todo))
    try:
        with _first_interrupt_sets(stop), young_collections_spaced():
            for records in backend.run(feed(), concurrency=concurrency, stop=stop):
                progress.ended(records.key)  # before the write: the backend refills this slot as soon as we take the next record
                done_keys.add(str(records.key))
                if census is not None and records.probe is not None:
                    census.merge(ProbeStats.from_json(records.probe))
                if records.termination_reason is TerminationReason.CONFIGURATION_ERROR and outcome.configuration_error is None:
                    outcome.configuration_error = _configuration_reason(records, specs)
                    outcome.failing_plans = _failing_plans(records)
                    stop.set()  # running trials end at their next turn; they are recorded aborted below
                elif records.status is TrialStatus.INTERRUPTED and outcome.configuration_error is not None:
                    records = _aborted(records, outcome)
                if records.status is TrialStatus.INTERRUPTED:
                    outcome.interrupted.append(records.key)
                    unknown = records.run_line.get("cost_usd", 0.0) is None or records.run_line.get("user_cost_usd", 0.0) is None
                    outcome.interrupted_spend[str(records.key)] = None if unknown else records.cost_usd
                    if unknown:
                        outcome.interrupted_known[str(records.key)] = records.cost_usd
                    outcome.spent_usd += records.cost_usd  # spent all the same: the budget counts it
                    progress.finished(records, written=False)
                    continue
                outcome.finished += 1
                outcome.spent_usd += records.cost_usd
                writer.put(records, outcome.spent_usd)
    except BaseException:
        # a second Ctrl-C, or a failure: the invocation ends here; what it left unfinished reruns on resume
        writer.close_quietly()
        _end_quietly(folder, [s.key for s in todo if str(s.key) not in done_keys], outcome.interrupted_spend,
                     outcome.interrupted_known)
        raise
    finally:
        writer.close()
        if probe is not None and census is not None:
            write_census(folder.root, probe, census)
    outcome.not_started = [s.key for s in todo if str(s.key) not in done_keys and str(s.key) not in started]
    if budget is not None and budget.reached:
        outcome.budget_stopped = True  # a send was refused: its trial and the others running ended interrupted
    if outcome.configuration_error is not None:
        _record_unstarted(todo, done_keys, outcome, folder)
    if outcome.budget_stopped and outcome.configuration_error is None:
        # as a budget stop always was: trials never started are not listed; the ones the budget cut short are
        folder.mark_interrupted(outcome.interrupted, outcome.interrupted_spend, outcome.interrupted_known)
    elif stop.is_set() and outcome.configuration_error is None:
        folder.mark_interrupted([*outcome.interrupted, *outcome.not_started], outcome.interrupted_spend,
                                outcome.interrupted_known)
    else:
        folder.clear_interrupted()
    write_summary(folder)
    progress.end()
    return outcome


def _configuration_reason(records: TrialRecords, specs: Sequence[TrialSpec]) -> str:
    """The one line a configuration stop is reported with: what to fix, for whom, and what the provider said."""
    from capplan.core.redaction import redact_text
    from capplan.executor.client import Client
    from capplan.executor.preflight import configuration_advice
    from capplan.trials.runner import plan_from_text

    spec = next(s for s in specs if s.key == records.key)
    detail = " ".join(str(records.trajectory.get("termination", {}).get("detail", "")).split())
    # the failing call may be the user simulator's: its plan is named when its detail says so
    user = detail.startswith("user simulator call") and spec.user_plan_json and spec.user_plan_fingerprint
    try:
        if user:
            assert spec.user_plan_json is not None and spec.user_plan_fingerprint is not None
            client = Client(plan_from_text(spec.user_plan_json, spec.user_plan_fingerprint), api_base=spec.user_api_base)
            advice = configuration_advice(client, spec.user_api_base)
        else:
            client = Client(plan_from_text(spec.plan_json, spec.plan_fingerprint), api_base=spec.api_base)
            advice = configuration_advice(client, spec.api_base)
    except Exception:  # noqa: BLE001 - the advice is a courtesy; the stop itself must not fail
        advice = f"a provider refused the call for plan {spec.plan_key}"
    return redact_text(f"{advice} (trial {records.key}: {detail[:300]})")


def _failing_plans(records: TrialRecords) -> frozenset[str] | None:
    """Whose configuration failed: the trial's plan, or every plan when the failing call was the shared user simulator's."""
    detail = str(records.trajectory.get("termination", {}).get("detail", ""))
    return None if detail.startswith("user simulator call") else frozenset({records.key.plan_key})


def _stop_label(plan_key: str, outcome: RunOutcome, what: str) -> tuple[TerminationReason, str]:
    """How a trial the configuration stop cut short is labelled: its own plan's failure, or the run stopping for another's.

    Only the failing plan's trials carry ``configuration_error``; a healthy plan's are
    ``run_stopped`` (aborted: nothing is known about that plan), the detail naming the other plan's failure.
    """
    failing = outcome.failing_plans
    if failing is None or plan_key in failing:
        return TerminationReason.CONFIGURATION_ERROR, f"{what} by a configuration error in another trial: " \
            f"{outcome.configuration_error}"
    return TerminationReason.RUN_STOPPED, (f"{what} by plan {', '.join(sorted(failing))}'s configuration error "
                                           f"(this plan's own calls were not refused; rerun with --retry-aborted): "
                                           f"{outcome.configuration_error}")


def _aborted(records: TrialRecords, outcome: RunOutcome) -> TrialRecords:
    """An in-flight trial the configuration stop cut short, recorded as aborted by it (its calls and cost kept)."""
    import dataclasses

    code, detail = _stop_label(records.key.plan_key, outcome, "run stopped")
    status = status_for(code)
    marks = {"status": status.value, "termination_reason": code.value, "counts_against_model": counts_against_model(status)}
    run_line = {**records.run_line, **marks, "passed": None}
    metrics = {**records.metrics, **marks}
    trajectory = dict(records.trajectory)
    termination = dict(trajectory.get("termination") or {})
    termination.update(reason=code.value, status=status.value, detail=detail)
    trajectory["termination"] = termination
    return dataclasses.replace(records, status=status, termination_reason=code, run_line=run_line,
                               metrics=metrics, trajectory=trajectory)


def _record_unstarted(todo: Sequence[TrialSpec], done: set[str], outcome: RunOutcome, folder: RunFolder) -> None:
    """After a configuration stop, every trial not run is written as aborted with its reason (no call made)."""
    from capplan.trials.runner import unstarted_records

    assert outcome.configuration_error is not None
    for spec in todo:
        if str(spec.key) in done:
            continue
        done.add(str(spec.key))
        outcome.finished += 1
        code, detail = _stop_label(spec.plan_key, outcome, "not started: the run was stopped")
        # written here, not through the progress display: these trials never started
        folder.write(unstarted_records(spec, code, detail))
    outcome.not_started = []
    outcome.interrupted = []


class _Writer:
    """Writes finished trials on a few threads of its own.

    The backend refills its running slots only when the driver takes the next record, so
    writing inline would make file I/O, not the provider, pace a concurrent run. Trials are
    independent and each one's line is appended after its own files, so the writers need no
    order among themselves.
    """

    def __init__(self, folder: RunFolder, progress: Progress, threads: int = 4, *, trials: int = 0) -> None:
        self.folder = folder
        self.progress = progress
        # the records' YAML is rendered off this process's GIL once there are enough of them
        self.renderer = RecordRenderer() if trials >= RENDER_MIN_TRIALS else None
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="run-folder-writer")
        # writes under way, and the first that failed: kept by callbacks, so that taking a record
        # costs the same however far the writers are behind (a scan of every pending write per
        # record was quadratic in a backlog)
        self._lock = threading.Lock()
        self._pending: set[Future[None]] = set()
        self._failed: Future[None] | None = None

    def put(self, records: TrialRecords, spent: float) -> None:
        with self._lock:
            failed = self._failed
        if failed is not None:
            failed.result()  # a write error stops the run in the driver's thread
        future = self.pool.submit(self._write, records, spent)
        with self._lock:
            self._pending.add(future)
        future.add_done_callback(self._done)

    def _done(self, future: Future[None]) -> None:
        with self._lock:
            self._pending.discard(future)
            if self._failed is None and not future.cancelled() and future.exception() is not None:
                self._failed = future

    def _write(self, records: TrialRecords, spent: float) -> None:
        self.folder.write(records, self.renderer)
        self.progress.finished(records, written=True, spent=spent)

    def close_quietly(self) -> None:
        """Wait for the writes under way; their errors are not this failure's (it is raised instead)."""
        self.pool.shutdown(wait=True)
        self._close_renderer()

    def close(self) -> None:
        self.pool.shutdown(wait=True)
        self._close_renderer()
        with self._lock:
            failed = self._failed
        if failed is not None:
            failed.result()

    def _close_renderer(self) -> None:
        if self.renderer is not None:
            self.renderer.close()


def _end_quietly(folder: RunFolder, unfinished: Sequence[TrialKey], spend: dict[str, float | None],
                 known: dict[str, float]) -> None:
    """Record the unfinished trials and the invocation's end, unless the folder itself is what failed."""
    try:
        folder.mark_interrupted(unfinished, spend, known)
    except (InputError, ConfinedPathError, OSError, ValueError):
        pass  # the error being raised says what went wrong with the folder


def write_summary(folder: RunFolder) -> None:
    """Re-render ``summary.md`` and ``summary.json`` from ``runs.jsonl``."""
    lines = list(folder.finished().values())
    died = folder.died_in_flight()  # each read once: the journal and runs.jsonl are the run's whole length
    # interrupted trials, trials that died in flight and superseded attempts: spent, but in no row
    summary = summarize(lines, unfinished_cost_usd=folder.unfinished_spent_usd(died) + folder.superseded_spent_usd())
    markdown = render_markdown(summary) + configuration_stop_line(lines) + folder.spend_note(died, lines)
    atomic_write(folder.root / "summary.md", markdown.encode("utf-8"))
    atomic_write(folder.root / "summary.json", render_json(summary).encode("utf-8"))


def configuration_stop_line(lines: Sequence[dict[str, Any]]) -> str:
    """``summary.md``'s line for a run a configuration error stopped ("" when none did).

    Kept apart from the statistics: it says why the rows hold aborted trials, not how the model did.
    """
    stopped = [line for line in lines if line.get("termination_reason") == TerminationReason.CONFIGURATION_ERROR.value]
    if not stopped:
        return ""
    plans = ", ".join(sorted({str(line["plan_key"]) for line in stopped}))
    others = [line for line in lines if line.get("termination_reason") == TerminationReason.RUN_STOPPED.value]
    with_it = ""
    if others:
        healthy = ", ".join(sorted({str(line["plan_key"]) for line in others}))
        with_it = f"; {len(others)} trial(s) of {healthy} stopped with it (run_stopped: not refused themselves)"
    return (f"\n**Run stopped by a configuration error**: {len(stopped)} trial(s) of {plans} aborted "
            "(configuration_error: a credential, gateway key, endpoint or model the provider refused, or something "
            "other than the provider answered; the first trial's trajectory.yaml termination.detail says which)"
            f"{with_it}; fix it and rerun with --retry-aborted.\n")


class _first_interrupt_sets:
    """While active, the first SIGINT sets ``stop``; the second raises KeyboardInterrupt."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop
        self.previous: Callable[..., Any] | int | None = None
        self.active = threading.current_thread() is threading.main_thread()

    def __enter__(self) -> None:
        if self.active:
            self.previous = signal.signal(signal.SIGINT, self._handle)

    def _handle(self, signum: int, frame: Any) -> None:
        if self.stop.is_set():
            raise KeyboardInterrupt
        self.stop.set()

    def __exit__(self, *exc: Any) -> None:
        if self.active:
            signal.signal(signal.SIGINT, self.previous)
