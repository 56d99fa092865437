"""Where trials execute. A backend takes specs and yields records; it never writes files.

Contract (``Backend``): ``run(specs, concurrency=K, stop=event)`` pulls specs from the
iterator only when it has room for another running trial (the driver's budget stop works by
ending that iterator), and yields each trial's :class:`~capplan.trials.spec.TrialRecords` as soon as
it finishes, in completion order. When ``stop`` is set it pulls no further specs, lets the
running trials end (the local backend's trials see the event between turns and end as
``interrupted``) and yields their records. ``BACKENDS`` maps ``--backend`` names to
``module:factory``, imported only when selected. ``cluster`` holds the Ray backend's parts:
the limiter actor, workers, credentials by name and the session.

May import: the executor, the trial vocabulary, the runner (a backend runs ``run_trial``), and
what the runner imports. Never ``report`` or the driver: the driver chooses a backend, not the
other way round.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol

from capplan.trials.spec import TrialRecords, TrialSpec

BACKENDS: dict[str, str] = {
    "local": "capplan.trials.backends.local:LocalBackend",
    "ray": "capplan.trials.backends.ray_backend:RayBackend",
}


class Backend(Protocol):
    """Runs trials somewhere and yields their records as they finish."""

    name: str

    def prepare(self, specs: Sequence[TrialSpec], *, concurrency: int | None = None) -> None:
        """Called once with every spec the run may start, and the run's concurrency, before ``run`` (a
        cluster ships their code; the local backend starts its worker processes)."""
        ...

    def run(self, specs: Iterable[TrialSpec], *, concurrency: int, stop: threading.Event) -> Iterator[TrialRecords]:
        """Yield one record per spec pulled, in completion order."""
        ...


def load_backend(name: str, **options: Any) -> Backend:
    """Instantiate the backend registered as ``name`` with its own options (e.g. the Ray address)."""
    module, _, attr = BACKENDS[name].partition(":")
    backend: Backend = getattr(importlib.import_module(module), attr)(**options)
    return backend
