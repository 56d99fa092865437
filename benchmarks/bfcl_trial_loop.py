"""The BFCL row of the trial-loop benchmark (``python benchmarks/trial_loop.py --bfcl``).

The 200 entries of BFCL's ``multi_turn_base``, imported by ``capplan trial import bfcl``, run
against a loopback scripted agent (another process, answering each request after 50 ms with the
ground truth's calls for the current user turn) at ``--concurrency 16`` through the real driver,
local backend and run folder, once per transport: the model compiled by ``capplan compile`` as a
user's OpenAI-route model is (the direct transport) and with ``transport: litellm``. Printed, per
transport:

* wall time of the run against the ideal: the sum of the trials' agent turns x 50 ms / 16;
* CPU of this process for the import, for loading the task files (``build_specs``: read and
  validate each file, import its components) and for the run;
* how many trials passed (the ground truth must pass all of them);
* peak RSS of this process (ru_maxrss) after the run.

Needs bfcl-eval in the environment: ``pip install --no-deps bfcl-eval==2026.3.23 mpmath==1.3.0``.
"""

from __future__ import annotations

import io
import os
import textwrap
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CATEGORY = "multi_turn_base"


#: the two transports a user's OpenAI-route model can take, as run-config entries
TRANSPORTS = {"direct": "", "litellm": "    transport: litellm\n"}


def compile_plan(work: Path, transport: str) -> Path:
    """The benchmark's agent model compiled by ``capplan compile`` for ``transport``."""
    config = work / f"run-{transport}.yaml"
    config.write_text(textwrap.dedent("""\
        models:
          bfcl-bench:
            provider: openai
            name: agent-model
        """) + TRANSPORTS[transport])
    out = work / f"plans-{transport}"
    done = subprocess.run([sys.executable, "-m", "capplan.cli", "compile", "--config", str(config), "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"capplan compile failed:\n{done.stdout}{done.stderr}")
    return out / "bfcl-bench.json"


def bfcl_row(work: Path, *, concurrency: int = 16, latency_s: float = 0.05, grader: str = "builtin",
             transport: str = "direct") -> dict[str, float]:
    """Import, load and run the base category through ``transport``; the figures the row prints."""
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("OPENAI_API_KEY", "sk-benchmark-loopback")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from capplan.trials.backends.local import LocalBackend
    from capplan.trials.driver import RunRequest, build_specs, drive
    from capplan.trials.importers.bfcl.pack import import_category
    from capplan.trials.report.progress import Progress
    from capplan.trials.run_folder.folder import RunFolder
    from capplan.trials.runner import RunContext, run_trial

    pack = work / "tasks"
    started = time.process_time()
    imported = import_category(CATEGORY, pack, grader=grader)  # type: ignore[arg-type]
    import_cpu = time.process_time() - started
    plan = compile_plan(work, transport)

    server = subprocess.Popen([sys.executable, "-m", "tests.trials.bfcl.scripted_agent", CATEGORY, str(latency_s)],
                              cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        base = server.stdout.readline().strip()
        out = work / f"run-{transport}"
        started = time.process_time()
        files = sorted(pack.glob("*.yaml"))  # what `trial run tasks/` expands the folder to
        specs = build_specs(RunRequest(tasks=files, plans=[plan], out=out, api_base=base, concurrency=concurrency))
        load_cpu = time.process_time() - started
        backend = LocalBackend(RunContext())
        run_trial(specs[0], backend.context)  # warm up: imports, pools and first call stay off the clock
        cpu0, wall0 = time.process_time(), time.perf_counter()
        drive(specs, RunFolder(out), backend, concurrency=concurrency, max_cost=None, progress=Progress(io.StringIO()))
        wall, run_cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    finally:
        server.kill()
        server.wait(timeout=10)
    lines = list(RunFolder(out).finished().values())
    turns = sum(int(line["turns"]) for line in lines)  # type: ignore[call-overload]
    passed = sum(1 for line in lines if line.get("passed") is True)
    ideal = turns * latency_s / concurrency
    return {"tasks": float(len(imported.written)), "trials": float(len(lines)), "passed": float(passed),
            "turns": float(turns), "wall_s": wall, "ideal_s": ideal, "import_cpu_s": import_cpu,
            "load_cpu_s": load_cpu, "run_cpu_s": run_cpu,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def print_bfcl_row(row: dict[str, float], concurrency: int, transport: str = "direct") -> None:
    print(f"BFCL {CATEGORY}, {transport} transport: {row['trials']:.0f} trials ({row['passed']:.0f} passed), {row['turns']:.0f} agent turns "
          f"at concurrency {concurrency}: {row['wall_s']:.2f} s vs ideal {row['ideal_s']:.2f} s "
          f"= {row['wall_s'] / row['ideal_s']:.2f}x")
    print(f"  CPU: import {row['import_cpu_s']:.2f} s, loading {row['tasks']:.0f} task files {row['load_cpu_s']:.2f} s, "
          f"run {row['run_cpu_s']:.2f} s; peak RSS {row['peak_rss_mib']:.0f} MiB")


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for name in TRANSPORTS:
            print_bfcl_row(bfcl_row(Path(tmp) / name, transport=name), 16, name)
