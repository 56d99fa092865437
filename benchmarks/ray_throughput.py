"""Trials on the local backend and on local Ray: throughput, and capplan's per-trial Ray overhead.

2 000 trials of a 4-turn scripted task (two user turns, each a tool call then a text answer)
against a loopback OpenAI-compatible server with 50 ms latency per call, through real litellm,
written to a run folder by the driver:

* the local backend at ``--concurrency 64``;
* local Ray with 2 and with 4 worker processes x 32 concurrent trials each.

For Ray it reports capplan's per-trial overhead: the time from the driver submitting a trial
to a worker starting it, plus the time from the worker finishing it to the driver holding its
records, as a share of the trial's wall time on the worker (target <= 5 %). Worker start-up
(a process and litellm's import) is reported apart from steady-state throughput.

The server runs in its own process so it competes with neither backend for the GIL.
Run from the project root:  python benchmarks/ray_throughput.py [--trials 2000] [--latency 0.05]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("CAPPLAN_TEST_CANARY_KEY", "sk-benchmark-not-a-secret")

from tests.cluster.runs import canary_plan, write_pack  # noqa: E402
from capplan.trials.backends.local import LocalBackend  # noqa: E402
from capplan.trials.backends.ray_backend import RayBackend  # noqa: E402
from capplan.trials.driver import RunRequest, build_specs, drive  # noqa: E402
from capplan.trials.report.progress import Progress  # noqa: E402
from capplan.trials.run_folder.folder import RunFolder  # noqa: E402

TASKS = 10


class _Clock(Progress):
    """Progress that stays quiet and notes when the first and the last trial finished."""

    def __init__(self) -> None:
        super().__init__(open(os.devnull, "w"), live=False)
        self.first: float | None = None
        self.last = 0.0

    def finished(self, records, *, written, spent=None):  # type: ignore[no-untyped-def]
        now = time.perf_counter()
        self.first = self.first or now
        self.last = now
        super().finished(records, written=written, spent=spent)


def run(label: str, request: RunRequest, backend: object, concurrency: int) -> dict[str, float]:
    clock = _Clock()
    started = time.perf_counter()
    outcome = drive(build_specs(request), RunFolder(request.out), backend, concurrency=concurrency,  # type: ignore[arg-type]
                    max_cost=None, progress=clock)
    wall = time.perf_counter() - started
    assert outcome.finished == request.trials * TASKS, outcome
    steady = clock.last - (clock.first or clock.last)
    n = outcome.finished
    row = {"wall_s": wall, "trials_per_s": n / wall, "steady_trials_per_s": (n - 1) / steady if steady else 0.0,
           "startup_s": (clock.first or started) - started}
    print(f"{label:<22} wall {wall:6.1f} s  {row['trials_per_s']:6.1f} trials/s overall  "
          f"{row['steady_trials_per_s']:6.1f} trials/s first-to-last result  "
          f"(first result after {row['startup_s']:.1f} s)")
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000, help="Total trials (split over 10 tasks).")
    parser.add_argument("--latency", type=float, default=0.05, help="Server latency per call, seconds.")
    args = parser.parse_args()
    per_task = max(1, args.trials // TASKS)
    server = subprocess.Popen([sys.executable, "-m", "tests.fake_provider", "--agent", "stateless", str(args.latency)], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        base = server.stdout.readline().strip()
        tmp = Path(tempfile.mkdtemp(prefix="capplan-ray-bench-"))
        tasks = write_pack(tmp / "pack", n_tasks=TASKS, user_turns=2)
        plan = tmp / "agent.json"
        plan.write_bytes(canary_plan().to_bytes())

        def request(out: str, concurrency: int) -> RunRequest:
            return RunRequest(tasks=tasks, plans=[plan], out=tmp / out, trials=per_task, concurrency=concurrency,
                              api_base=base)

        n = per_task * TASKS
        ideal = n * 4 * args.latency / 64
        print(f"{n} trials x 4 calls, {args.latency * 1000:.0f} ms per call, 64 in flight: ideal wall {ideal:.1f} s "
              f"({os.cpu_count()} CPUs)")
        run("local --concurrency 64", request("local", 64), LocalBackend(), 64)
        for workers in (2, 4):
            backend = RayBackend(workers=workers)
            run(f"ray {workers} x 32", request(f"ray{workers}", workers * 32), backend, workers * 32)
            s = backend.stats
            overhead = [a + b for a, b in zip(s.schedule_s, s.return_s)]
            share = statistics.mean(overhead) / statistics.mean(s.trial_wall_s)
            print(f"{'':<22} per trial: wall on worker {statistics.median(s.trial_wall_s) * 1000:.0f} ms (median), "
                  f"scheduling {statistics.median(s.schedule_s) * 1000:.1f} ms, "
                  f"return {statistics.median(s.return_s) * 1000:.1f} ms (medians); "
                  f"overhead / trial wall = {share:.3f} (mean; target <= 0.05); "
                  f"limiter calls {s.limiter.get('requests_served', 0)}")
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
