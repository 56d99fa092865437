"""Everything a cell needs while it runs, shared by all workers of one run."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from capplan.evals.reasoning_replay.fixture import Session
from capplan.evals.reasoning_replay.outcome import CellFailed, CellOutcome
from capplan.evals.reasoning_replay.provider.client import Client
from capplan.evals.reasoning_replay.routes import Route
from capplan.evals.reasoning_replay.run.settings_probe import discover
from capplan.evals.reasoning_replay.wire.knobs import Knobs


@dataclass(frozen=True)
class Options:
    """The run's command-line choices that shape requests."""

    variants: tuple[str, ...]
    positions: tuple[str, ...]
    steps: tuple[str, ...]
    want_direct: frozenset[str]
    lane_attempts: int
    max_tokens: int
    turn1_max_tokens: int
    probe: str
    turn1_tool_choice: str = "auto"  # auto (send none) | required | tool (get_weather by name)


@dataclass
class RunContext:
    """Route, client, session and options, plus per-model settings found once per run."""

    route: Route
    client: Client
    session: Session
    options: Options
    saved_knobs: dict[str, Knobs] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # unreadable log lines met while loading
    stop_reason: str = ""
    stop_state: str = ""
    _knobs: dict[str, Knobs | CellOutcome] = field(default_factory=dict)
    _locks: dict[str, threading.Lock] = field(default_factory=dict)
    _guard: threading.Lock = field(default_factory=threading.Lock)

    def want_direct(self, model: str) -> bool:
        """Whether this model's cells resample until they reach a direct lane."""
        return self.route.lanes and model in self.options.want_direct

    def knobs_for(self, model: str) -> Knobs:
        """The model's settings, discovered by the first cell that asks (others wait)."""
        with self._guard:
            lock = self._locks.setdefault(model, threading.Lock())
        with lock:
            if model not in self._knobs:
                saved = self.saved_knobs.get(model)
                try:
                    self._knobs[model] = saved if saved is not None else self._discover(model)
                except CellFailed as failure:
                    self._knobs[model] = failure.outcome
            found = self._knobs[model]
        if isinstance(found, CellOutcome):
            raise CellFailed(found)
        return found

    def _discover(self, model: str) -> Knobs:
        """The settings probe for ``model`` under this run's route, session and options."""
        return discover(self.client, self.route, self.session, model,
                        probe=self.options.probe, max_tokens=self.options.max_tokens)

    def stop(self, reason: str, state: str) -> None:
        """Ask every worker to leave the remaining cells (recorded as ``state``) for the next run."""
        with self._guard:
            if not self.stop_reason:
                self.stop_reason, self.stop_state = reason, state
