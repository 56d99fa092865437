"""The Python API for notebooks and scripts: ``run`` a trial set and ``load_run`` a run folder.

``run`` does what ``capplan trial run`` does, in the same order and with the same checks: the
task files and plans are validated, the run folder is checked (a resume that changes the
experiment is refused), every agent and user plan's credentials are checked before any
trial starts, and the trials are written to ``out`` exactly as the command writes them. It
returns a :class:`RunResult` instead of an exit status; input problems raise the same
located :class:`~capplan.core.errors.UserError` the command prints.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capplan.trials.report.run_data import LoadedRun, TrialResult, load_run


@dataclass(frozen=True)
class RunResult:
    """What one ``run`` did, and the run folder read back afterwards."""

    out: Path
    #: trials finished by this call (skipped ones, finished earlier, are not counted)
    finished: int
    #: trials already finished in ``out`` (a resume skips them)
    skipped: int
    interrupted: tuple[str, ...]
    not_started: tuple[str, ...]
    budget_stopped: bool
    spent_usd: float
    #: set when a provider refused a credential, endpoint or model: the run stopped there
    configuration_error: str | None
    folder: LoadedRun

    @property
    def trials(self) -> tuple[TrialResult, ...]:
        """Every trial of the folder (this call's and earlier ones), as typed records."""
        return self.folder.trials

    @property
    def complete(self) -> bool:
        """Every trial of the run finished (none interrupted, none left by a budget or configuration stop)."""
        return not (self.interrupted or self.not_started or self.budget_stopped or self.configuration_error)

    def to_pandas(self) -> Any:
        """The folder's trials as a ``pandas.DataFrame`` (pandas must be installed)."""
        return self.folder.to_pandas()


def run(tasks: Sequence[str | os.PathLike[str]], plans: Sequence[str | os.PathLike[str]], *,
        out: str | os.PathLike[str], user_plan: str | os.PathLike[str] | None = None, trials: int = 1,
        concurrency: int = 4, max_turns: int | None = None, max_cost: float | None = None,
        api_base: str | None = None, user_api_base: str | None = None, retry_aborted: bool = False,
        show_progress: bool = False, notify: Callable[[str], None] | None = None,
        workers: int | None = 1) -> RunResult:
    """Run every task (task files, or folders of them) against every plan, ``trials`` times each, into ``out``.

    Re-running the same call on the same ``out`` resumes it (finished trials are skipped).
    ``workers``: processes running the trials, as ``trial run --workers`` (1, the default: this
    process; None: one per usable core).
    ``show_progress`` draws the command's progress line on stderr; ``notify`` receives the
    notes the command prints (a skipped non-task file, a torn line set aside).
    """
    from capplan.trials.backends import load_backend
    from capplan.trials.driver import RunRequest, build_run, drive
    from capplan.trials.report.progress import Progress
    from capplan.trials.run_folder.folder import RunFolder
    from capplan.trials.tasks.task_paths import expand_task_paths

    if workers is not None and workers < 1:
        from capplan.trials.usage_problem import UsageProblem

        raise UsageProblem(f"workers={workers}: give a whole number >= 1 (1 runs the trials in this process), "
                           "or None for one per usable core")
    tell = notify or (lambda _text: None)
    task_paths = expand_task_paths([Path(t) for t in tasks], tell)
    request = RunRequest(tasks=task_paths, plans=[Path(p) for p in plans], out=Path(out),
                         user_plan=Path(user_plan) if user_plan is not None else None, trials=trials,
                         concurrency=concurrency, max_turns=max_turns, max_cost=max_cost, api_base=api_base,
                         user_api_base=user_api_base)
    specs, settings = build_run(request)
    folder = RunFolder(request.out, notify=tell)
    folder.check(specs, settings=settings)
    _require_credentials(request)
    progress = Progress() if show_progress else Progress(io.StringIO(), live=False)
    outcome = drive(specs, folder, load_backend("local", workers=workers), concurrency=concurrency, max_cost=max_cost,
                    progress=progress, retry_aborted=retry_aborted, settings=settings,
                    command=["capplan.trials.run"])
    return RunResult(out=request.out, finished=outcome.finished, skipped=outcome.skipped,
                     interrupted=tuple(str(k) for k in outcome.interrupted),
                     not_started=tuple(str(k) for k in outcome.not_started), budget_stopped=outcome.budget_stopped,
                     spent_usd=outcome.spent_usd, configuration_error=outcome.configuration_error,
                     folder=load_run(request.out, notify=tell))


def _require_credentials(request: Any) -> None:
    """Every agent and user plan's credentials, checked before any trial starts (as the command does)."""
    from capplan.executor.client import Client
    from capplan.executor.preflight import check_credentials

    clients = [(Client.from_plan_file(plan, api_base=request.api_base), request.api_base) for plan in request.plans]
    if request.user_plan is not None:
        clients.append((Client.from_plan_file(request.user_plan, api_base=request.user_api_base),
                        request.user_api_base))
    check_credentials(clients)
    for client, _ in clients:
        client.require_credentials()


__all__ = ["RunResult", "load_run", "run"]
