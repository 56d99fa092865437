"""A trial worker: one Ray actor process running many trials at once in threads.

Threads, as on the local backend, because a trial spends its time waiting on the provider.
The worker checks its node has the credential variables the plans name before it accepts a
trial, shares one client per plan among its trials (the runner's ``RunContext``), and sends
every provider attempt through the cluster-wide limiter. Plans arrive as their canonical JSON
through the object store, once per plan, and the runner verifies each against the spec's
fingerprint before building its client. A trial's records go back to the driver as the
call's return value; the worker writes nothing.

What leaves a worker is scrubbed by value against every credential its clients hold: the records
it returns, and its stdout, stderr and log records (Ray keeps those as log files on the node).
"""

from __future__ import annotations

import dataclasses
import os
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from capplan.executor.client import Completion
from capplan.executor.plan import Plan
from capplan.core.redaction import redact_standard_streams
from capplan.trials.backends.cluster.credentials import require
from capplan.trials.backends.cluster.limited_completion import LimitedCompletion
from capplan.trials.backends.cluster.limiter_actor import RayCallGate
from capplan.trials.run_folder.call_journal import CallBuffer, journalled
from capplan.trials.run_folder.recording import redact_records
from capplan.trials.runner import RunContext, run_trial
from capplan.trials.spec import TrialRecords, TrialSpec


@dataclass(frozen=True)
class WorkerIdentity:
    """Where a worker incarnation runs; ``holder`` names its limiter seats (it changes on restart)."""

    holder: str
    node_id: str
    node: str
    pid: int


@dataclass(frozen=True)
class TrialResult:
    """One trial's records and where and how long it ran, as the driver receives them."""

    records: TrialRecords
    worker: WorkerIdentity
    started_at: float  # wall clock, to measure scheduling against the driver's submission time
    wall_s: float
    #: the trial's journal entries the driver had not drained yet (CallBuffer.take)
    calls: list[dict[str, Any]] = field(default_factory=list)


class TrialWorker:
    """Ray actor body; the backend starts it with ``max_concurrency`` = its trial slots + 2."""

    def __init__(self, index: int, credential_names: list[str], limiter_name: str) -> None:
        import ray

        redact_standard_streams()
        node_id = ray.get_runtime_context().get_node_id()
        node = socket.gethostname()
        self.identity = WorkerIdentity(f"worker-{index}-{node_id[:8]}-{os.getpid()}", node_id, node, os.getpid())
        require(credential_names, f"node {node} ({node_id[:8]})")
        # looked up by name: a handle among the constructor arguments would pin it in the object store
        gate = RayCallGate(ray.get_actor(limiter_name), self.identity.holder)
        self.cancel = threading.Event()
        self.context = RunContext(cancel=self.cancel, completion_for=lambda plan: _limited(plan, gate))
        # every provider call, until the driver drains it into the run folder's calls.jsonl
        self.calls = CallBuffer()

    def ready(self) -> WorkerIdentity:
        """Who this incarnation is; litellm is imported now so the first trial does not pay for it."""
        from capplan.executor.client import _litellm_completion

        _litellm_completion()
        return self.identity

    def run(self, spec: TrialSpec, plan_json: str, user_plan_json: str | None) -> TrialResult:
        """Run one trial; the plans travel beside the spec, once per plan in the object store."""
        full = dataclasses.replace(spec, plan_json=plan_json, user_plan_json=user_plan_json)
        started_at, started = time.time(), time.perf_counter()
        log = self.calls.begin(str(spec.key))
        with journalled(log):
            records = redact_records(run_trial(full, self.context))
        return TrialResult(records, self.identity, started_at, time.perf_counter() - started,
                           calls=self.calls.take(log.execution))

    def drain_calls(self) -> list[dict[str, Any]]:
        """The calls recorded since the last drain (the driver appends them to calls.jsonl)."""
        return self.calls.drain()

    def stop(self) -> None:
        """Running trials end at their next turn as interrupted."""
        self.cancel.set()


def _limited(plan: Plan, gate: RayCallGate) -> Completion:
    from capplan.executor.client import default_completion

    # the plan's own sender (direct on OpenAI-compatible routes, else litellm) under the run's limiter
    return LimitedCompletion(default_completion(plan), gate, plan)
