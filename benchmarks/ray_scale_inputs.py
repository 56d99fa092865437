"""The per-unit costs ``docs/scale.md`` multiplies out to 100 000 trials on 50 nodes.

Measured in one run on this machine:

* the driver's write of one finished trial (``RunFolder.write``: two YAML dumps, two atomic
  files, one ``runs.jsonl`` append) and the pickled size of one ``TrialResult`` (a 4-call trial
  against a loopback server, through real litellm);
* the limiter actor's throughput: 8 worker processes calling ``acquire`` then ``release`` with
  no limit configured, as fast as they are answered;
* one ``ray.wait`` scan over N pending references (the driver's arrivals thread does one per
  result).

Run from the project root:  python benchmarks/ray_scale_inputs.py
"""

from __future__ import annotations

import os
import pickle
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("CAPPLAN_TEST_CANARY_KEY", "sk-benchmark-not-a-secret")

from capplan.executor.rate_limits import RateLimits  # noqa: E402
from tests.fake_provider import FakeProvider, stateless_agent  # noqa: E402
from tests.cluster.hammer import Hammer  # noqa: E402
from tests.cluster.runs import canary_plan, write_pack  # noqa: E402
from capplan.trials.backends.cluster.limiter_actor import start_limiter  # noqa: E402
from capplan.trials.backends.cluster.worker import TrialResult, WorkerIdentity  # noqa: E402
from capplan.trials.driver import RunRequest, build_specs  # noqa: E402
from capplan.trials.run_folder.folder import RunFolder  # noqa: E402
from capplan.trials.runner import RunContext, run_trial  # noqa: E402


def trial_costs(tmp: Path) -> tuple[int, float]:
    """(pickled TrialResult bytes, median ms of the driver's write of one trial)."""
    tasks = write_pack(tmp / "pack", n_tasks=1, user_turns=2)
    plan = tmp / "agent.json"
    plan.write_bytes(canary_plan().to_bytes())
    with FakeProvider(stateless_agent) as fake:
        specs = build_specs(RunRequest(tasks=tasks, plans=[plan], out=tmp / "out", trials=20, api_base=fake.base))
        context = RunContext()
        records = [run_trial(spec, context) for spec in specs]
    size = len(pickle.dumps(TrialResult(records[0], WorkerIdentity("w", "n", "host", 1), 0.0, 0.0)))
    folder = RunFolder(tmp / "out")
    folder.open(specs)
    times = []
    for record in records:
        started = time.perf_counter()
        folder.write(record)
        times.append(time.perf_counter() - started)
    return size, statistics.median(times) * 1000


def limiter_pairs_per_s(ray: object, seconds: float = 5.0) -> float:
    import ray as ray_module

    limiter = start_limiter(RateLimits(), name="bench-limiter")
    hammer = ray_module.remote(Hammer).options(num_cpus=0)
    workers = [hammer.remote(limiter, f"w{i}") for i in range(8)]
    ray_module.get([w.ready.remote() for w in workers])
    start_at = time.time() + 0.5
    runs = ray_module.get([w.run.remote("p", "K", start_at, seconds, 0.0) for w in workers])
    for actor in [*workers, limiter]:
        ray_module.kill(actor)
    return sum(len(r) for r in runs) / seconds


def wait_scan_ms(n: int) -> float:
    import ray as ray_module

    @ray_module.remote(num_cpus=0)
    class Sleeper:
        def nap(self) -> None:
            time.sleep(60)

    sleeper = Sleeper.options(max_concurrency=n + 1).remote()  # type: ignore[attr-defined]
    refs = [sleeper.nap.remote() for _ in range(n)]
    time.sleep(2)
    times = []
    for _ in range(20):
        started = time.perf_counter()
        ray_module.wait(refs, num_returns=1, timeout=0)
        times.append(time.perf_counter() - started)
    ray_module.kill(sleeper)
    return statistics.median(times) * 1000


def main() -> None:
    import ray

    tmp = Path(tempfile.mkdtemp(prefix="capplan-scale-"))
    size, write_ms = trial_costs(tmp)
    print(f"pickled TrialResult of a 4-call trial: {size / 1024:.1f} KB; driver write of one trial: {write_ms:.1f} ms")
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=200 * 1024 * 1024, log_to_driver=False)
    try:
        print(f"limiter actor: {limiter_pairs_per_s(ray):.0f} acquire+release pairs/s from 8 worker processes")
        for n in (1000, 4000):
            print(f"ray.wait scan over {n} pending refs: {wait_scan_ms(n):.2f} ms (median)")
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
