"""The trial-loop workload through inspect_ai's own eval: the peer row beside ``benchmarks/trial_loop.py``.

The same workload as ``trial_loop.py``'s throughput rows: a task of three scripted user turns
("add one", "and one more", "thanks, that's all"), each answered by the agent with one tool call
and then a text answer, so six agent turns per trial; the agent is the scripted loopback server
``python -m tests.fake_provider LATENCY_S`` in a process of its own (it calls the first tool it is
offered after a user turn, and answers in text after a tool result). Here inspect_ai runs it as one
of its users would write it:

* the model is inspect_ai's OpenAI provider (``openai/agent-model``) pointed at the loopback server
  by ``base_url``, with a dummy key, on chat completions (``responses_api=False``: a model name the
  provider does not know it takes for a new OpenAI model, and would speak the Responses API to);
* one sample per trial; ``max_connections`` = the concurrency, and ``max_samples`` the same, so
  as many trials are in flight as capplan's ``--concurrency`` allows;
* the task's tools with the same names, descriptions and parameters (``add``, ``note``,
  ``explode``; the counter kept in the sample's store; inspect_ai wants a description for every
  parameter, so each has a short one), offered with ``use_tools``; a system message, then a solver
  that plays each user turn and lets ``generate`` run the tool loop;
* logs written to a temporary folder, no display, no scorer.

Printed, measured in one run: wall time over the ideal ``trials × 6 × latency / concurrency`` at
50 ms and at 8 ms, and this process's CPU per agent turn (every thread: ``time.process_time``).
Every sample must have run six agent turns (model calls), or the script fails.

inspect_ai is a benchmark-only install, never a capplan dependency. ``.ci/run`` installs it with
``--no-deps`` and the modules its log reader imports (see docs/trials.md); its eval needs one more,
``agent-client-protocol`` (the ``acp`` module, imported when an eval starts), and otherwise runs on
what capplan's own environment already holds (openai, httpx, anyio, tenacity, pydantic, …). By hand:

    .venv/bin/python -m pip install --no-deps inspect_ai==0.3.285 psutil==7.2.2 nest_asyncio2==1.7.4 \\
        shortuuid==1.0.13 jsonlines==4.0.0 ijson==3.6.0 textual==8.2.8 jsonpatch==1.48 jsonpointer==3.12 \\
        mmh3==5.3.1 zstandard==0.25.0 zipfile-zstd==0.0.4 agent-client-protocol==0.12.1

Run from the project root:  PYTHONPATH=$PWD python benchmarks/inspect_row.py [--trials 500] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import os
import selectors
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TURNS = 6  # three scripted user turns, each answered by a tool turn and a text turn
USER_TURNS = ("add one", "and one more", "thanks, that's all")
LATENCIES_S = (0.05, 0.008)
#: the most the loopback server may take to print its address, and to exit once killed
SERVER_START_S = 30.0
SERVER_STOP_S = 10.0
MODEL = "openai/agent-model"
DUMMY_KEY = "sk-benchmark-loopback"


def start_server(latency_s: float) -> tuple[subprocess.Popen[str], str]:
    """The scripted agent in a process of its own, answering after ``latency_s``; (process, base URL)."""
    server = subprocess.Popen([sys.executable, "-m", "tests.fake_provider", str(latency_s)], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        with selectors.DefaultSelector() as ready:  # a server that never prints must not hang the benchmark
            ready.register(server.stdout, selectors.EVENT_READ)
            if not ready.select(SERVER_START_S):
                raise RuntimeError(f"the loopback server printed no address within {SERVER_START_S:.0f} s")
        base = server.stdout.readline().strip()
        if not base.startswith("http://127.0.0.1:"):
            raise RuntimeError(f"the loopback server printed {base!r}, not its base URL")
    except BaseException:
        stop_server(server)
        raise
    return server, base


def stop_server(server: subprocess.Popen[str]) -> None:
    server.kill()
    server.wait(timeout=SERVER_STOP_S)


def counter_task(trials: int):  # type: ignore[no-untyped-def]  # inspect_ai's types stay out of capplan's mypy
    """The workload as an inspect_ai Task: one sample per trial, the task's tools, three user turns."""
    from inspect_ai import Task
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ChatMessageUser
    from inspect_ai.solver import Generate, TaskState, solver, system_message, use_tools
    from inspect_ai.tool import tool
    from inspect_ai.util import store

    @tool
    def add():  # type: ignore[no-untyped-def]
        async def execute(amount: int) -> dict[str, int]:
            """Add to the counter.

            Args:
                amount: how much to add.
            """
            value = store().get("counter", 0) + amount
            store().set("counter", value)
            return {"value": value}

        return execute

    @tool
    def note():  # type: ignore[no-untyped-def]
        async def execute(text: str) -> str:
            """Write a note.

            Args:
                text: the note.
            """
            store().set("notes", [*store().get("notes", []), text])
            return "noted " + text

        return execute

    @tool
    def explode():  # type: ignore[no-untyped-def]
        async def execute() -> str:
            """Always fails."""
            raise RuntimeError("the fuse blew")

        return execute

    @solver
    def scripted_user():  # type: ignore[no-untyped-def]
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            for i, text in enumerate(state.metadata["turns"]):
                if i:  # the sample's input is the first turn
                    state.messages.append(ChatMessageUser(content=text))
                state = await generate(state)  # tool_calls="loop": the tool call, its result, the answer
            return state

        return solve

    samples = [Sample(input=USER_TURNS[0], id=i, metadata={"turns": list(USER_TURNS)}) for i in range(trials)]
    return Task(dataset=samples, solver=[system_message("You keep a counter."), use_tools(add(), note(), explode()),
                                         scripted_user()])


def run_eval(trials: int, concurrency: int, base_url: str, log_dir: str) -> int:
    """Run the task through ``inspect_ai.eval``; the agent turns run, after checking each sample ran six."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.event import ModelEvent
    from inspect_ai.model import get_model

    # responses_api=False: the provider takes a model name it does not know for a new OpenAI model and
    # speaks the Responses API to it; the loopback agent (like most OpenAI-compatible servers) speaks chat
    model = get_model(MODEL, base_url=base_url, api_key=DUMMY_KEY, memoize=False, responses_api=False)
    [log] = inspect_eval(counter_task(trials), model=model, display="none", log_dir=log_dir,
                         max_connections=concurrency, max_samples=concurrency, fail_on_error=True)
    assert log.status == "success", (log.status, log.error)
    assert log.samples is not None and len(log.samples) == trials, len(log.samples or [])
    turns = 0
    for sample in log.samples:
        calls = sum(isinstance(event, ModelEvent) for event in sample.events)
        assert calls == TURNS, f"sample {sample.id} ran {calls} agent turns, not {TURNS}"
        assert sample.error is None, sample.error
        turns += calls
    return turns


def inspect_ai_row(trials: int, concurrency: int, latency_s: float) -> tuple[float, int, float]:
    """(wall seconds, agent turns run, CPU seconds of this process, all threads) of ``trials`` trials
    through inspect_ai at ``concurrency``, against the scripted agent answering after ``latency_s``."""
    os.environ.setdefault("INSPECT_LOG_LEVEL", "warning")
    server, base = start_server(latency_s)
    try:
        with tempfile.TemporaryDirectory() as logs:
            run_eval(1, concurrency, base, str(Path(logs) / "warm-up"))  # imports, the provider, the client
            started, cpu = time.perf_counter(), time.process_time()
            turns = run_eval(trials, concurrency, base, str(Path(logs) / "run"))
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    finally:
        stop_server(server)
    assert turns == trials * TURNS, turns
    return wall, turns, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=500, help="samples per eval, one per trial (default 500)")
    parser.add_argument("--concurrency", type=int, default=32,
                        help="max_connections and max_samples: the trials in flight (default 32)")
    args = parser.parse_args()
    if args.trials < 1 or args.concurrency < 1:
        parser.error("--trials and --concurrency take a positive integer")
    from importlib.metadata import PackageNotFoundError, version

    try:
        versions = f"{version('inspect_ai')}, openai {version('openai')}"  # the SDK carries much of its CPU
    except PackageNotFoundError as missing:
        raise SystemExit(f"{missing.name} is not installed: see the pip install line in `{sys.argv[0]} --help`") from None
    ratios, cpu_ms = [], []
    for latency_s in LATENCIES_S:
        wall, turns, cpu = inspect_ai_row(args.trials, args.concurrency, latency_s)
        ideal = args.trials * TURNS * latency_s / args.concurrency
        ratios.append(f"{wall / ideal:.2f}x at {latency_s * 1e3:.0f} ms ({wall:.2f} s vs ideal {ideal:.2f} s)")
        cpu_ms.append(f"{cpu / turns * 1e3:.2f}")
    print(f"inspect_ai ({versions}), same workload ({args.trials} trials x {TURNS} turns at concurrency "
          f"{args.concurrency}): wall / ideal {ratios[0]}, {ratios[1]}; CPU per turn {' / '.join(cpu_ms)} ms")


if __name__ == "__main__":
    main()
