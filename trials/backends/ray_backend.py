"""``--backend ray``: the same trials on a Ray cluster; the driver alone writes the run folder.

The driver starts N worker actors (``capplan.trials.backends.cluster.worker``), each running its share of the
run's ``--concurrency`` in threads, and one limiter actor the workers' provider calls pass
through. It pulls specs only when a worker has a free slot. ``capplan trial run`` refuses
``--max-cost`` here: a worker's sends reach the driver's budget only when drained, too late to
stop them (see :mod:`capplan.trials.run_folder.budget`). Plans go into the
object store once each, as canonical JSON; a spec travels without them.

A worker or node that dies mid-trial loses only its running attempts: Ray restarts the actor
(on another node when its node is gone), the driver frees the dead incarnation's limiter
seats and resubmits each lost trial from its start. The trial is written once, when an
attempt finishes, with the dead attempts counted in its ``metrics.yaml`` (``lost_attempts``).
If the driver itself dies, its actors die with it; rerunning the command resumes from
``runs.jsonl`` like any other run.

Call journal: workers cannot append to the driver's ``calls.jsonl`` (another process, often another
machine), so each keeps its trials' sends and calls in a buffer that the driver drains every
``_DRAIN_S`` and appends to the journal; a finished trial's remaining calls come back with its
records. A worker or driver that dies loses at most its last drain interval of calls from the
journal; the calls drained before are counted as spend of trials that died in flight.
"""

from __future__ import annotations

import dataclasses
import math
import queue
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capplan.executor.plan import Plan
from capplan.executor.rate_limits import RateLimits
from capplan.core.redaction import redact_text
from capplan.trials.run_folder.call_journal import CallJournal
from capplan.trials.backends.feed import Feed
from capplan.trials.backends.cluster.credentials import credential_names, secret_names
from capplan.trials.backends.cluster.gateway_check import check_gateway
from capplan.trials.backends.cluster.limiter_actor import start_limiter
from capplan.trials.backends.cluster.session import ClusterUsageError, EnvironmentSource, Session
from capplan.trials.backends.cluster.worker import TrialResult, TrialWorker, WorkerIdentity
from capplan.trials.run_folder.recording import redact_records
from capplan.trials.spec import TrialRecords, TrialSpec
from capplan.trials.tasks.taskfile import TaskFile, is_path_ref

#: How long the driver waits for any result before looking at the stop event again.
_POLL_S = 0.2
#: How often the driver drains the workers' call buffers into calls.jsonl.
_DRAIN_S = 0.25
#: How long a finished trial waits for its worker's drains under way to be journalled first (seconds).
_SETTLE_S = 5.0


@dataclass
class RayRunStats:
    """What the driver measured, for progress, the benchmark and ``docs/scale.md``."""

    lost_attempts: int = 0
    workers: list[WorkerIdentity] = field(default_factory=list)  # the first incarnation of each worker
    by_node: Counter[str] = field(default_factory=Counter)
    # per finished trial: seconds from submission to the worker starting it, and from its end to the driver
    schedule_s: list[float] = field(default_factory=list)
    return_s: list[float] = field(default_factory=list)
    trial_wall_s: list[float] = field(default_factory=list)
    limiter: dict[str, Any] = field(default_factory=dict)

    def report(self) -> list[str]:
        """Closing lines for the run's stderr: workers and nodes, lost attempts, each limiter lane."""
        nodes = ", ".join(f"{node} {n}" for node, n in sorted(self.by_node.items())) or "none"
        lines = [f"ray: {len(self.workers)} worker(s); trials per node: {nodes}; lost attempts rerun: "
                 f"{self.lost_attempts}"]
        for lane, st in self.limiter.get("lanes", {}).items():
            lines.append(f"ray: limiter {lane}: {st['granted']} call(s), {st['rate_limited']} rate-limited, "
                         f"{st['waited_s']:.1f} s waited in total")
        return lines


@dataclass
class _Attempt:
    spec: TrialSpec
    worker: int
    holder: str  # the incarnation it was sent to, whose limiter seats die with it
    submitted: float


class _Arrivals:
    """Notes when each attempt's result reaches the driver, on a thread of its own.

    The driver's thread spends part of its time writing the previous trial; watching for
    results here keeps that time out of the measured return latency and hands results over
    in the order they arrived.
    """

    def __init__(self, ray: Any) -> None:
        self.ray = ray
        self.queue: queue.Queue[tuple[Any, float]] = queue.Queue()
        self._watched: set[Any] = set()
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="capplan-ray-arrivals", daemon=True)
        self._thread.start()

    def watch(self, ref: Any) -> None:
        with self._lock:
            self._watched.add(ref)

    def close(self) -> None:
        self._closed.set()
        self._thread.join(timeout=5)

    def _loop(self) -> None:
        while not self._closed.is_set():
            with self._lock:
                refs = list(self._watched)
            if not refs:
                self._closed.wait(0.005)
                continue
            ready, rest = self.ray.wait(refs, num_returns=1, timeout=0.05)
            if ready and rest:
                more, _ = self.ray.wait(rest, num_returns=len(rest), timeout=0)
                ready += more
            arrived = time.time()
            with self._lock:
                self._watched.difference_update(ready)
            for ref in ready:
                self.queue.put((ref, arrived))


class RayBackend:
    """Runs trials on a Ray cluster (``address`` None starts a local one)."""

    name = "ray"

    def __init__(self, *, address: str | None = None, workers: int | None = None,
                 limits: RateLimits | None = None) -> None:
        self.address = address
        self.workers = workers
        self.limits = limits or RateLimits()
        self.stats = RayRunStats()
        self._session: Session | None = None
        self._credentials: list[str] = []
        self.journal: CallJournal | None = None

    def attach_journal(self, journal: CallJournal | None) -> None:
        """Where the workers' drained calls are journalled (None: nowhere)."""
        self.journal = journal

    def prepare(self, specs: Sequence[TrialSpec], *, concurrency: int | None = None) -> None:
        """Join the cluster with the task environments in its runtime env; check every node's credentials
        and that every node resolves the gateway (``LLM_PROXY_*``) as the driver does."""
        if not specs or self._session is not None:
            return
        plans = _plans(specs)
        self._credentials = credential_names(plans)
        self._session = Session(self.address, _environment_sources(specs), secret_names(plans), local_cpus=self.workers)
        try:
            self._session.check_credentials(self._credentials)
            check_gateway(self._session)  # every node must route as the driver does (LLM_PROXY_*)
        except BaseException:
            self.close()
            raise

    def run(self, specs: Iterable[TrialSpec], *, concurrency: int, stop: threading.Event) -> Iterator[TrialRecords]:
        """Yield each trial's records as it finishes, in completion order."""
        pending = iter(specs)
        first = next(pending, None)
        if first is None:
            self.close()
            return
        if self._session is None:
            # the task environments must be known before joining: they travel in the job's runtime env
            raise RuntimeError("RayBackend.prepare(specs) must be called with every spec before run()")
        try:
            yield from _Drive(self, self._session, concurrency, stop).run(first, pending)
        finally:
            self.close()

    def close(self) -> None:
        """Leave the cluster (stopping a local cluster this run started)."""
        if self._session is not None:
            self._session.close()
            self._session = None


class _Drive:
    """One run's scheduling loop on the driver."""

    def __init__(self, backend: RayBackend, session: Session, concurrency: int, stop: threading.Event) -> None:
        self.backend = backend
        self.ray = session.ray
        self.stop = stop
        cluster_cpus = int(self.ray.cluster_resources().get("CPU", 1))
        n = backend.workers or max(1, min(cluster_cpus, concurrency))
        if n > cluster_cpus:
            raise ClusterUsageError(
                f"--workers {n} needs {n} CPUs but the cluster has {cluster_cpus}; lower --workers or add nodes"
            )
        self.slots = math.ceil(concurrency / n)
        limiter_name = f"capplan-limiter-{uuid.uuid4().hex[:12]}"
        self.limiter = start_limiter(backend.limits, name=limiter_name)
        actor = self.ray.remote(TrialWorker).options(
            num_cpus=1, max_concurrency=self.slots + 2, max_restarts=-1, max_task_retries=0
        )
        self.actors = [actor.remote(i, backend._credentials, limiter_name) for i in range(n)]
        self.identities: list[WorkerIdentity] = self._ready()
        backend.stats.workers = list(self.identities)
        self.load = [0] * n
        # a worker that died is restarting: nothing is sent to it until its ready() answers
        self.restarting: dict[int, Any] = {}
        self.in_flight: dict[Any, _Attempt] = {}
        self.plan_refs: dict[str, Any] = {}
        self.lost: Counter[str] = Counter()
        self.feed = Feed(iter(()))  # the run's, from run()
        self.arrivals = _Arrivals(self.ray)
        self.journal = backend.journal
        self.drains: dict[Any, int] = {}  # pending drain_calls() -> worker
        self.last_drain = 0.0

    def _ready(self) -> list[WorkerIdentity]:
        try:
            identities: list[WorkerIdentity] = self.ray.get([a.ready.remote() for a in self.actors])
        except self.ray.exceptions.RayActorError as exc:
            self._shutdown()
            raise ClusterUsageError(f"a trial worker could not start: {redact_text(str(exc))}") from None
        return identities

    def run(self, first: TrialSpec, pending: Iterator[TrialSpec]) -> Iterator[TrialRecords]:
        feed = self.feed = Feed(pending)
        feed.retry.append(first)
        stopping = False
        try:
            while True:
                if self.stop.is_set() and not stopping:
                    stopping = True
                    for actor in self.actors:
                        actor.stop.remote()
                if not stopping:
                    feed.fill(self._free_worker, self._submit)
                if not self.in_flight and (stopping or feed.done):
                    return
                self._check_restarted()
                self._drain()
                for ref, arrived in self._arrived():
                    records = self._collect(ref, arrived, stopping)
                    if records is not None:
                        yield records
        finally:
            self.arrivals.close()
            self._drain(final=True)
            self.backend.stats.limiter = self._limiter_stats()
            self._shutdown()

    def _drain(self, *, final: bool = False) -> None:
        """Move the workers' buffered calls into the journal: the finished drains, then new ones when due."""
        if self.journal is None:
            return
        if final and self.drains:
            self.ray.wait(list(self.drains), num_returns=len(self.drains), timeout=5)
        if self.drains:
            ready, _ = self.ray.wait(list(self.drains), num_returns=len(self.drains), timeout=0)
            self._journal_drained(ready)
        now = time.monotonic()
        if final or (not self.drains and now - self.last_drain >= _DRAIN_S):
            self.last_drain = now
            for worker, actor in enumerate(self.actors):
                if worker not in self.restarting:
                    self.drains[actor.drain_calls.remote()] = worker
            if final:
                self.ray.wait(list(self.drains), num_returns=len(self.drains), timeout=5)
                self._drain()

    def _settle_drains(self, worker: int) -> None:
        """Journal the drains of ``worker`` still under way, before a trial it ran is written.

        A drain the worker answered while the trial ran holds the trial's earlier calls, and the
        trial's result only those made after it. Were the result journalled and the trial written
        first, a trial whose every call was drained would get no end line, and its calls, arriving
        later, would open a new attempt that never ends: spend counted again as died in flight.
        Waited for up to ``_SETTLE_S``: a drain still out then is journalled when it comes, as before.
        """
        assert self.journal is not None
        refs = [ref for ref, owner in self.drains.items() if owner == worker]
        if not refs:
            return
        ready, _ = self.ray.wait(refs, num_returns=len(refs), timeout=_SETTLE_S)
        self._journal_drained(ready)

    def _journal_drained(self, ready: list[Any]) -> None:
        """Append the entries of the finished drains ``ready`` to the journal, in the order given."""
        assert self.journal is not None
        for ref in ready:
            del self.drains[ref]
            try:
                entries = self.ray.get(ref)
            except self.ray.exceptions.RayError:
                continue  # the worker died: its undrained calls die with it (the drained ones are counted)
            self.journal.extend(entries)

    def _arrived(self) -> list[tuple[Any, float]]:
        """What arrived: waits up to the poll interval for one result, then takes every other one already in."""
        try:
            first = [self.arrivals.queue.get(timeout=_POLL_S)]
        except queue.Empty:
            return []
        while True:
            try:
                first.append(self.arrivals.queue.get_nowait())
            except queue.Empty:
                return first

    def _free_worker(self) -> int | None:
        alive = [i for i in range(len(self.actors)) if i not in self.restarting]
        if not alive:
            return None
        best = min(alive, key=lambda i: self.load[i])
        return best if self.load[best] < self.slots else None

    def _check_restarted(self) -> None:
        if not self.restarting:
            return
        refs = {ref: worker for worker, ref in self.restarting.items()}
        ready, _ = self.ray.wait(list(refs), num_returns=len(refs), timeout=0)
        for ref in ready:
            worker = refs[ref]
            del self.restarting[worker]
            try:
                self.identities[worker] = self.ray.get(ref)
            except self.ray.exceptions.RayActorError:
                self.restarting[worker] = self.actors[worker].ready.remote()  # still coming back

    def _submit(self, spec: TrialSpec, worker: int) -> None:
        plan = self._plan_ref(spec.plan_fingerprint, spec.plan_json)
        user = self._plan_ref(spec.user_plan_fingerprint, spec.user_plan_json) if spec.user_plan_json else None
        slim = dataclasses.replace(spec, plan_json="", user_plan_json=None)
        ref = self.actors[worker].run.remote(slim, plan, user)
        self.in_flight[ref] = _Attempt(spec, worker, self.identities[worker].holder, time.time())
        self.load[worker] += 1
        self.arrivals.watch(ref)

    def _plan_ref(self, fingerprint: str | None, text: str | None) -> Any:
        assert fingerprint is not None and text is not None
        ref = self.plan_refs.get(fingerprint)
        if ref is None:
            ref = self.plan_refs[fingerprint] = self.ray.put(text)
        return ref

    def _collect(self, ref: Any, arrived: float, stopping: bool) -> TrialRecords | None:
        attempt = self.in_flight.pop(ref)
        self.load[attempt.worker] -= 1
        exceptions = self.ray.exceptions
        try:
            result: TrialResult = self.ray.get(ref)
        except (exceptions.RayActorError, exceptions.WorkerCrashedError, exceptions.ObjectLostError):
            # the worker (or its node) died with this attempt running: free its seats, run the trial again
            key = str(attempt.spec.key)
            if self.journal is not None:
                self.journal.lost(key)  # its drained calls stay in the journal, counted as died in flight
            self.lost[key] += 1
            self.backend.stats.lost_attempts += 1
            self.limiter.release_holder.remote(attempt.holder)
            if attempt.worker not in self.restarting:
                self.restarting[attempt.worker] = self.actors[attempt.worker].ready.remote()
            if not stopping:
                self.feed.retry.append(attempt.spec)
            return None
        self.identities[attempt.worker] = result.worker
        if self.journal is not None:
            self._settle_drains(attempt.worker)
            self.journal.extend(result.calls)  # before the driver writes the trial (its end line names them)
        stats = self.backend.stats
        stats.by_node[result.worker.node] += 1
        stats.trial_wall_s.append(result.wall_s)
        stats.schedule_s.append(max(0.0, result.started_at - attempt.submitted))
        stats.return_s.append(max(0.0, arrived - result.started_at - result.wall_s))
        # the worker scrubbed them against its own environment; the driver's clients may know more
        records = redact_records(result.records)
        lost = self.lost.pop(str(records.key), 0)
        return dataclasses.replace(records, metrics={**records.metrics, "lost_attempts": lost},
                                   node=result.worker.node)

    def _limiter_stats(self) -> dict[str, Any]:
        try:
            stats: dict[str, Any] = self.ray.get(self.limiter.stats.remote(), timeout=10)
        except Exception:  # a limiter lost at shutdown only costs the statistics
            return {}
        return stats

    def _shutdown(self) -> None:
        for actor in [*getattr(self, "actors", []), self.limiter]:
            self.ray.kill(actor)


def _plans(specs: Sequence[TrialSpec]) -> list[Plan]:
    texts = {s.plan_fingerprint: s.plan_json for s in specs}
    texts.update({s.user_plan_fingerprint: s.user_plan_json for s in specs
                  if s.user_plan_fingerprint and s.user_plan_json})
    return [Plan.model_validate_json(text) for text in texts.values()]


def _environment_sources(specs: Sequence[TrialSpec]) -> list[EnvironmentSource]:
    """The top-level modules each task imports (environment, grader function) and where to find them."""
    import yaml

    sources: dict[tuple[str, str], EnvironmentSource] = {}
    for spec in specs:
        task = TaskFile.model_validate(yaml.safe_load(spec.task_text))
        folder = Path(spec.task_path).parent
        for target in task.code_refs():
            where = target.rpartition(":")[0]
            # a path ref ships its first path segment (its folder, or the file itself)
            module = where.split("/")[0].removesuffix(".py") if is_path_ref(target) else where.split(".")[0]
            sources[(module, str(folder))] = EnvironmentSource(module, folder)
    return list(sources.values())
