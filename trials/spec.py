"""The backend seam: what one trial is, and everything it leaves behind.

Contract (any backend — local threads, Ray, anything else — relies on exactly this):

- :class:`TrialSpec` is pure data: strings, ints and floats only, so it pickles and crosses
  process and machine boundaries. It carries the plan as its canonical JSON text with the
  fingerprint, the task file's content (not only its path), the trial index, the optional
  user plan, and the run-level caps. A worker needs nothing else from the driver; credentials
  come from the worker's own environment and are never part of a spec.
- ``capplan.trials.runner.run_trial(spec) -> TrialRecords`` runs one whole trial and returns every
  byte the run folder needs. It never touches the run folder, so a trial that runs on another
  machine is written by the driver exactly like a local one.
- :class:`TrialRecords` is plain JSON-safe dicts (trajectory, metrics, the ``runs.jsonl``
  line) plus the key, status and cost the driver needs for progress and the budget stop.
  Records whose status is ``interrupted`` are not written as finished; the trial reruns on
  resume.
- Only the driver writes (``capplan.trials.run_folder.folder.RunFolder``): atomic per-trial files first,
  then the ``runs.jsonl`` line as the commit marker.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field
from typing import Any

from capplan.trials.outcome import TerminationReason, TrialStatus


@dataclass(frozen=True)
class TrialKey:
    """Identity of a trial inside a run: which model, which task, which repetition."""

    plan_key: str
    task_id: str
    index: int

    def __str__(self) -> str:
        return f"{self.plan_key}/{self.task_id}/{self.index}"

    @property
    def relpath(self) -> str:
        """The trial's folder inside the run folder."""
        return f"trials/{self.plan_key}/{self.task_id}/{self.index}"


@dataclass(frozen=True)
class TrialSpec:
    """One trial, as pure picklable data (see the module docstring for the contract)."""

    plan_json: str
    plan_fingerprint: str
    plan_key: str
    task_path: str
    task_text: str
    task_id: str
    task_pack: str
    index: int
    user_plan_json: str | None = None
    user_plan_fingerprint: str | None = None
    max_turns_cap: int | None = None
    api_base: str | None = None
    user_api_base: str | None = None
    #: the run config's ``rate_limit_probe`` block as plain data (``RateLimitProbeConfig.model_dump``)
    rate_limit_probe: dict[str, Any] | None = None
    #: the run config's ``trials:`` choices set (tool_choice, parallel_tool_calls, tool_timeout_s), as plain
    #: data; each wins over the task's own (``capplan.trials.runner.applied_choices``)
    trial_choices: dict[str, Any] | None = None
    #: the task file as the records name it (project-relative, see ``capplan.trials.run_folder.run_identity``);
    #: ``task_path`` is where the trial reads and imports it from, which depends on the machine
    task_name: str | None = None
    #: the --judge-plan (a grader's ``judge`` keyword: τ²'s NL-assertion judge), and where it is sent
    judge_plan_json: str | None = None
    judge_plan_fingerprint: str | None = None
    judge_api_base: str | None = None

    @property
    def key(self) -> TrialKey:
        return TrialKey(self.plan_key, self.task_id, self.index)

    @property
    def task_sha256(self) -> str:
        return hashlib.sha256(self.task_text.encode("utf-8")).hexdigest()

    @property
    def recorded_task_path(self) -> str:
        """The task file as trajectory.yaml and metrics.yaml name it."""
        return self.task_name if self.task_name is not None else self.task_path

    @property
    def trial_id(self) -> str:
        """Stamped on log lines (e.g. the reply guard's) so a defect names the trial that paid for it."""
        return str(self.key)


@dataclass(frozen=True)
class TrialRecords:
    """Everything one finished (or interrupted) trial leaves; JSON-safe dicts only."""

    key: TrialKey
    status: TrialStatus
    termination_reason: TerminationReason
    cost_usd: float
    trajectory: dict[str, Any] = field(repr=False)
    metrics: dict[str, Any] = field(repr=False)
    run_line: dict[str, Any] = field(repr=False)
    node: str | None = field(default=None, compare=False)  # where it ran (Ray backend), for progress; never written
    #: the trial's probe census (``ProbeStats.to_json``) when probe mode was armed; the driver sums it into probe.json
    probe: dict[str, Any] | None = field(default=None, repr=False, compare=False)
    #: ``trajectory.yaml`` and ``metrics.yaml`` as the worker process that made the records rendered them (seam
    #: *worker rendering*); None: the run folder's writer renders them. ``dataclasses.replace`` never copies it
    #: (``init=False``), so records changed on their way to the writer are rendered again from what they hold
    rendered: tuple[bytes, bytes] | None = field(default=None, init=False, repr=False, compare=False)


def with_rendered(records: TrialRecords, rendered: tuple[bytes, bytes] | None) -> TrialRecords:
    """A copy of ``records`` that carries ``rendered`` (the files' YAML, rendered from exactly these records)."""
    copy = dataclasses.replace(records)
    object.__setattr__(copy, "rendered", rendered)  # frozen, and not an __init__ argument: set on the fresh copy
    return copy
