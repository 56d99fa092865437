"""Trial-runner benchmark: loop overhead per agent turn, and throughput at concurrency 32.

Measured in one run:

* loop overhead per agent turn — the time a turn spends in the trial runner's own code (the
  loop, tool execution, recording), outside ``Client.generate``, as a ratio to a 50 ms
  loopback round trip (target <= 0.02). Measured on a 6-turn scripted task with an instant
  in-process completion, so nothing but our code is on the clock; the executor's own
  build + parse per turn is reported beside it for context;
* throughput — 500 trials of the 6-turn task against a loopback server (a separate process)
  answering after 50 ms, at ``--concurrency 32`` through the real driver, backend and run
  folder: wall time over the ideal ``trials × turns × 50 ms / 32`` (target <= 1.3). Measured
  twice: with the executor's HTTP call made by a minimal keep-alive client (the runner and
  executor on the clock, litellm not), and through real litellm, whose own per-call CPU is
  printed beside it with the floor it sets (calls x CPU per call, all under one GIL): on a
  2-core machine it, not the runner, bounds the second figure;
* peak RSS of this process (ru_maxrss) after the throughput run;
* turn cost by history length — the CPU time (all of this process's threads: the tool runs on
  the trial's task-code worker) one agent turn takes through the real loop
  (``ToolCallingLoop._run_turn``: building the request, the executor's build, an instant
  in-process completion, parsing, running the tool, recording) when the conversation holds
  about 30, 300 and 1 000 messages, medians over the turns near each length in a few long
  trials; target: the cost at 300 <= 1.5x the cost at 30. The loop extends one request, so its
  own work and the executor's build cost what the new messages cost; printed beside it, the
  same turns less the time the client spends deep-copying the built kwargs before handing them
  to litellm (``copy.deepcopy`` in ``executor/client.py``, linear in the history), and the turns
  of a run with that copy skipped (the stub completion mutates nothing): what the loop and the
  executor's build cost without it. Two last rows send the same turns through the catalogue's
  gpt-5 plan on the direct transport, which makes no such copy, to a loopback server in another
  process answering at once: on its bundled wire, the Responses API (``benchmarks/responses_server.py``,
  the strict emulator: every turn replays the reasoning items of earlier turns, encrypted, each
  before its follower), and compiled onto chat completions (an overlay preset: the same policies
  but the codec, no reasoning returned). This process's CPU per turn, request build, HTTP client
  and response parsing included;
* chat vs Responses through the real path — 500 trials of the 6-turn task at ``--concurrency 32``
  against a loopback server answering after 50 ms, through the real driver, backend, run folder
  and the plan's own direct transport: gpt-5 compiled onto chat completions against the chat
  server, and the bundled gpt-5 plan against the Responses server. Wall time (and its ratio to the
  ideal) and this process's CPU per turn (every thread) for each, and Responses over chat;
* worker processes (``trial run --workers N``) — the same 500 trials at ``--concurrency 32`` through
  the real driver, backend and run folder, at 50 ms and at 8 ms, with 1, 2, 4 … workers up to every
  usable core: wall time over the ideal and the CPU per turn of this process and its workers
  together (their start included), the loopback server's own CPU per turn, and the CPU floor (the
  least wall over the ideal that the two CPU figures allow on this machine's cores); with more than
  one worker, the command's own process's share of that CPU and the number of workers whose turns it
  keeps up with on its one core (the workers' CPU per turn over its own: where the curve on a machine
  with many cores flattens), for gpt-5 on chat completions through the direct transport and,
  beside it, the keep-alive floor sender (``benchmarks/keep_alive_sender.py``, imported by each
  worker; ``--repeats N`` runs each cell N times, the cells' runs interleaved, and prints the medians
  with their range), and capplan's CPU per turn and wall over the floor sender's, each capplan run
  paired with the floor sender's run right after it. Beside them, the bare Python loop
  (``benchmarks/bare_loop.py``: the same trials' wire, journal lines and one record per trial, with no
  plan, bounds, containment or YAML, in as many processes as there are workers), and capplan over it,
  paired the same way: where a Python runner's floor lies. The peer
  row, the same workload through inspect_ai, is ``benchmarks/inspect_row.py``; where the CPU of a turn
  goes, part by part, is ``benchmarks/turn_breakdown.py``.

Run from the project root:  python benchmarks/trial_loop.py [--trials 500] [--concurrency 32]
                            [--turn-cost-only | --responses-only | --workers-only [--repeats N] | --bfcl]
                            [--reference-cost [--reference-rounds N]] [--work-dir DIR]

``--reference-cost`` runs the chosen workload once per mode and prints what the reference mode
(every speed-only path off) costs against the fast one (``benchmarks/reference_cost.py``).
"""

from __future__ import annotations

import argparse
import copy
import io
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.pop("LLM_PROXY_BASE_URL", None)

from benchmarks.bare_loop import measure_bare  # noqa: E402
from benchmarks.keep_alive_sender import KeepAliveCompletion  # noqa: E402
from benchmarks.loopback_run import CHAT_SERVER, Measured, against_server  # noqa: E402
from capplan.executor import client as client_module  # noqa: E402
from capplan.executor.plan import Plan  # noqa: E402
from tests.executor.plans import make_plan  # noqa: E402
from tests.fake_provider import agent_answer  # noqa: E402
from tests.trials.helpers import spec_for, write_task  # noqa: E402
from capplan.trials.backends.local import LocalBackend  # noqa: E402
from capplan.trials.driver import drive  # noqa: E402
from capplan.trials.loop.tool_loop import ToolCallingLoop  # noqa: E402
from capplan.trials.report.progress import Progress  # noqa: E402
from capplan.trials.run_folder.folder import RunFolder  # noqa: E402
from capplan.trials.runner import RunContext, run_trial  # noqa: E402

LATENCY_S = 0.05
TURNS = 6  # three scripted user turns, each answered by a tool turn and a text turn
#: the loopback servers: chat completions (the scripted agent), and the Responses emulator answering as it
RESPONSES_SERVER = "benchmarks.responses_server"
#: presets/catalogue.yaml's gpt-5 on chat completions: an overlay preset matched before the bundled
#: one, with its policies but no responses_api block (so the default codec for chat, `openai`)
GPT5_ON_CHAT = """\
presets:
  gpt5_on_chat:
    match: ["gpt-5"]
    schema_sanitizer: strict
    response_policy: array_dict_map
    reasoning_codec: openai
    params:
      supports_sampling_params: false
"""


def instant_completion(**kwargs: Any) -> dict[str, Any]:
    """The scripted agent, answering at once (what the server answers, minus HTTP and latency)."""
    status, body = agent_answer({"messages": kwargs["messages"], "tools": kwargs.get("tools")})
    assert status == 200
    return body


def loop_overhead(task: Path, plan: Plan, trials: int) -> tuple[float, float]:
    """(runner-only seconds per turn, executor build+parse seconds per turn), medians over trials."""
    inside: list[float] = []
    original = ToolCallingLoop._agent_generate

    def timed(self: ToolCallingLoop, turn: int) -> Any:
        started = time.perf_counter()
        try:
            return original(self, turn)
        finally:
            inside.append(time.perf_counter() - started)

    ToolCallingLoop._agent_generate = timed  # type: ignore[method-assign]
    context = RunContext(completion=instant_completion)
    runner_per_turn, executor_per_turn = [], []
    try:
        run_trial(spec_for(task, plan), context)  # warm caches (plan, client, task, tool memo)
        for i in range(trials):
            inside.clear()
            started = time.perf_counter()
            records = run_trial(spec_for(task, plan, index=i), context)
            total = time.perf_counter() - started
            turns = records.metrics["turns"]
            assert turns == TURNS, records.metrics["termination_reason"]
            runner_per_turn.append((total - sum(inside)) / turns)
            executor_per_turn.append(sum(inside) / turns)
    finally:
        ToolCallingLoop._agent_generate = original  # type: ignore[method-assign]
    return statistics.median(runner_per_turn), statistics.median(executor_per_turn)


def litellm_call_cpu_ms(calls: int = 300) -> float:
    """litellm.completion's CPU per call (every thread of this process, its background logging
    included), against a loopback server in another process with no added latency."""
    import litellm

    server = subprocess.Popen([sys.executable, "-m", "tests.fake_provider", "0"], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        kwargs = dict(model="openai/agent-model", api_base=server.stdout.readline().strip(),
                      api_key="sk-benchmark-loopback", max_retries=0, messages=[{"role": "user", "content": "hi"}])
        for _ in range(10):
            litellm.completion(**kwargs)
        time.sleep(0.3)
        started = time.process_time()
        for _ in range(calls):
            litellm.completion(**kwargs)
        time.sleep(0.5)  # litellm builds its success-logging payload on a thread of its own after returning
        return (time.process_time() - started) / calls * 1e3
    finally:
        server.kill()
        server.wait(timeout=10)


def throughput(task: Path, plan: Plan, trials: int, concurrency: int, out: Path,
               completion: Any = None, server_module: str = CHAT_SERVER, *, latency_s: float = LATENCY_S,
               workers: int = 1, completion_factory: str | None = None) -> tuple[float, int, float]:
    """(wall seconds, turns run, CPU seconds) for ``trials`` trials against a loopback server answering
    after ``latency_s``. CPU: this process's, every thread, plus the worker processes' (``workers > 1``:
    ``trial run --workers``, each worker's start-up included; one process is warmed up first)."""
    run = measure(task, plan, trials, concurrency, out, completion, server_module, latency_s=latency_s,
                  workers=workers, completion_factory=completion_factory)
    return run.wall, run.turns, run.cpu


def measure(task: Path, plan: Plan, trials: int, concurrency: int, out: Path,
            completion: Any = None, server_module: str = CHAT_SERVER, *, latency_s: float = LATENCY_S,
            workers: int = 1, completion_factory: str | None = None) -> Measured:
    """:func:`throughput`'s run, with the loopback server's CPU beside the runner's (read once it has exited)."""
    backend: LocalBackend | None = None

    def prepare(base: str) -> Callable[[], object]:
        nonlocal backend
        specs = [spec_for(task, plan, index=i, api_base=base) for i in range(trials)]
        if workers == 1:
            backend = LocalBackend(RunContext(completion=completion))
            run_trial(spec_for(task, plan, index=trials + 1, api_base=base), backend.context)  # import litellm, warm up
        else:
            backend = LocalBackend(workers=workers, completion_factory=completion_factory)
        ready = backend
        return lambda: drive(specs, RunFolder(out), ready, concurrency=concurrency, max_cost=None,
                             progress=Progress(io.StringIO()))

    wall, cpu, command_cpu, server_cpu = against_server(server_module, latency_s, prepare)
    if workers > 1:
        assert backend is not None and backend.stats is not None and backend.stats.workers == workers, backend
    turns = 0
    for line in RunFolder(out).finished().values():
        assert line["termination_reason"] == "user_stop", line
        turns += int(line["turns"])  # type: ignore[call-overload]
    return Measured(wall, turns, cpu, server_cpu, command_cpu)


#: the latencies of the worker-count rows: a provider's typical answer, and a fast one that makes the runner's CPU show
CURVE_LATENCIES_S = (0.05, 0.008)
FLOOR_SENDER = "benchmarks.keep_alive_sender:keep_alive_for"
#: the label of the bare Python loop's rows (``benchmarks/bare_loop.py``)
BARE_LOOP = "bare Python loop"


def worker_counts() -> list[int]:
    """1, 2, 4, 8 … up to every usable core, and every usable core (what ``trial run`` takes by default)."""
    from capplan.trials.backends.local import usable_cores

    cores = usable_cores()
    return sorted({cores, *(2**k for k in range(cores.bit_length()) if 2**k <= cores)})


def workers_curve(folder: Path, task: Path, plans: dict[str, Plan], trials: int, concurrency: int,
                  repeats: int = 1) -> None:
    """Wall over the ideal and CPU per turn for 1, 2 and all workers at 50 and 8 ms: gpt-5 on chat through
    the direct transport (the real path), and beside it the keep-alive floor sender and the bare Python loop
    (``benchmarks/bare_loop.py``: the workload's wire and records with nothing else, in as many processes as
    there are workers), measured in one run.

    Beside each cell: the loopback server's own CPU per turn (it shares the machine's cores with the runner),
    and the CPU floor, the least wall over the ideal those two CPU figures allow on this machine's cores.

    With ``repeats`` > 1 each cell is run that many times and its medians are printed with their range:
    on a shared 2-core machine one run's CPU per turn moves by a tenth or more from one minute to the next.
    So the cells' runs are interleaved (each repeat runs every worker count with both senders and the bare
    loop, one after the other), and two last lines per latency pair each capplan run with the floor sender's
    run right after it, and with the bare loop's after that: ratios of runs a few seconds apart, which a
    machine's drift over minutes does not bias."""
    senders = (("gpt-5 on chat, direct transport", plans["chat"], None, None),
               ("keep-alive floor sender", make_plan("openai", "agent-model", key="bench"), KeepAliveCompletion(),
                FLOOR_SENDER))
    counts = worker_counts()
    for latency in CURVE_LATENCIES_S:
        ideal = trials * TURNS * latency / concurrency
        runs: dict[tuple[str, int], list[Measured]] = {(label, n): [] for label in [*(label for label, *_ in senders), BARE_LOOP]
                                                       for n in counts}
        for repeat in range(repeats):
            for workers in counts:
                for label, plan, completion, factory in senders:
                    out = folder / f"curve-{latency}-{label.split()[0]}-{workers}-{repeat}"
                    run = measure(task, plan, trials, concurrency, out, completion, latency_s=latency,
                                  workers=workers, completion_factory=factory)
                    assert run.turns == trials * TURNS, run.turns
                    runs[label, workers].append(run)
                bare = measure_bare(trials, concurrency, folder / f"curve-{latency}-bare-{workers}-{repeat}",
                                    latency_s=latency, processes=workers)
                assert bare.turns == trials * TURNS, bare.turns
                runs[BARE_LOOP, workers].append(bare)
        for label in [label for label, *_ in senders] + [BARE_LOOP]:
            cells = [_curve_cell(workers, runs[label, workers], ideal, shares=label != BARE_LOOP) for workers in counts]
            print(f"workers ({label}), {trials} trials x {TURNS} turns at concurrency {concurrency}, "
                  f"{latency * 1e3:.0f} ms (ideal {ideal:.2f} s): " + "; ".join(cells), flush=True)
        ours = senders[0][0]
        for floor, whose in ((senders[1][0], "the floor sender's run right after it"),
                             (BARE_LOOP, "the bare loop's run with as many processes, right after the floor sender's")):
            paired = []
            for workers in counts:
                cpu = [a.cpu / a.turns / (b.cpu / b.turns) for a, b in zip(runs[ours, workers], runs[floor, workers])]
                wall = [a.wall / b.wall for a, b in zip(runs[ours, workers], runs[floor, workers])]
                paired.append(f"{workers} worker(s) CPU per turn {_median_range(cpu, '.2f', 'x')}, "
                              f"wall {_median_range(wall, '.2f', 'x')}")
            print(f"capplan / the {floor} at {latency * 1e3:.0f} ms, each capplan run over {whose}: "
                  + "; ".join(paired), flush=True)


def _curve_cell(workers: int, runs: list[Measured], ideal: float, *, shares: bool = True) -> str:
    """One cell of :func:`workers_curve`'s line: ``runs``' medians (and ranges) at ``workers`` workers
    (``shares``: with the command's process's share; the bare loop's parent only waits for its processes)."""
    ratios = [run.wall / ideal for run in runs]
    per_turn = [run.cpu / run.turns * 1e3 for run in runs]
    server = [run.server_cpu / run.turns * 1e3 for run in runs]
    floors = [cpu_floor(run, ideal) for run in runs]
    share = "" if workers == 1 or not shares else (
        f" (the command's process {_median_range([r.command_cpu / r.turns * 1e3 for r in runs], '.3f', ' ms/turn')}:"
        f" one core's worth at about {_median_range([command_ceiling(r) for r in runs], '.1f', ' workers')})")
    return (f"{workers} worker(s) {_median_range(ratios, '.2f', 'x')}, "
            f"CPU {_median_range(per_turn, '.3f', ' ms/turn')}{share} "
            f"+ server {_median_range(server, '.3f', ' ms/turn')}, "
            f"CPU floor {_median_range(floors, '.2f', 'x')}")


def command_ceiling(run: Measured) -> float:
    """How many workers' turns the command's process keeps up with on its one core (its threads share one
    GIL): the workers' CPU per turn over its own. Past that many workers, on a machine with the cores for
    them, the command's process and not the workers paces the run (the ceiling of the many-core curve)."""
    workers_cpu = run.cpu - run.command_cpu
    return workers_cpu / run.command_cpu if run.command_cpu > 0 else float("inf")


def cpu_floor(run: Measured, ideal: float) -> float:
    """The least wall over the ideal the run's CPU allows on this machine: the runner's and the server's CPU
    spread over every usable core with none idle. A wall near it is CPU-bound; only less CPU lowers it."""
    from capplan.trials.backends.local import usable_cores

    return (run.cpu + run.server_cpu) / usable_cores() / ideal


def _median_range(values: list[float], spec: str, unit: str) -> str:
    """``values``' median, and its range when there is more than one."""
    middle = f"{statistics.median(values):{spec}}{unit}"
    if len(values) == 1:
        return middle
    return f"{middle} ({min(values):{spec}}-{max(values):{spec}})"


#: History lengths the turn-cost row reports, and how near a turn's history must be to count.
TURN_COST_SIZES = (30, 300, 1000)
TURN_COST_WINDOW = 8


class _TimedCopy:
    """Stands in for the ``copy`` module in ``capplan.executor.client``: its ``deepcopy`` is timed, or skipped."""

    def __init__(self, skip: bool = False) -> None:
        self.spent = 0.0
        self.skip = skip

    def deepcopy(self, value: Any) -> Any:
        if self.skip:  # the completion stub never mutates what it is given
            return value
        started = time.process_time()
        try:
            return copy.deepcopy(value)
        finally:
            self.spent += time.process_time() - started


def turn_cost(folder: Path, plan: Plan, trials: int = 5, *, skip_copy: bool = False,
              api_base: str | None = None) -> dict[int, tuple[float, float]]:
    """(seconds per agent turn, the same without the client's deepcopy) through the real loop at
    each of ``TURN_COST_SIZES`` history lengths.

    One scripted user turn adds four messages (user, the tool call, its result, the answer), so
    a trial of 260 user turns passes every size; each turn is timed around ``_run_turn`` with
    the wire's length when it started.
    """
    user_turns = max(TURN_COST_SIZES) // 4 + 10
    task = write_task(folder, task_id="long", turns=[f"add one, step {i}" for i in range(user_turns)],
                      extra=f"max_turns: {2 * user_turns + 2}\n")
    samples: dict[int, list[float]] = {size: [] for size in TURN_COST_SIZES}
    without_copy: dict[int, list[float]] = {size: [] for size in TURN_COST_SIZES}
    original = ToolCallingLoop._run_turn
    copier = _TimedCopy(skip=skip_copy)

    def timed(self: ToolCallingLoop, turn: int) -> Any:
        size = len(self.wire)
        copier.spent = 0.0
        started = time.process_time()
        try:
            return original(self, turn)
        finally:
            elapsed = time.process_time() - started
            for wanted in TURN_COST_SIZES:
                if abs(size - wanted) <= TURN_COST_WINDOW:
                    samples[wanted].append(elapsed)
                    without_copy[wanted].append(elapsed - copier.spent)

    # with an api_base the plan's own sender talks to that server; else the in-process stub answers
    context = RunContext() if api_base is not None else RunContext(completion=instant_completion)
    run_trial(spec_for(task, plan, index=trials, api_base=api_base), context)  # warm: plan, client, task, tool memo
    for wanted in TURN_COST_SIZES:
        samples[wanted].clear()
    ToolCallingLoop._run_turn = timed  # type: ignore[method-assign]
    client_module.copy = copier  # type: ignore[assignment]
    try:
        for i in range(trials):
            records = run_trial(spec_for(task, plan, index=i, api_base=api_base), context)
            assert records.metrics["termination_reason"] == "user_stop", records.trajectory["termination"]
    finally:
        ToolCallingLoop._run_turn = original  # type: ignore[method-assign]
        client_module.copy = copy
    return {size: (statistics.median(samples[size]), statistics.median(without_copy[size])) for size in TURN_COST_SIZES}


def gpt5_plans(folder: Path) -> dict[str, Plan]:
    """The catalogue's gpt-5 on each wire, both on the direct transport: ``responses`` (the bundled
    plan) and ``chat`` (compiled with :data:`GPT5_ON_CHAT`, by ``capplan compile``)."""
    bundled = Plan.load(ROOT / "golden" / "plans" / "gpt-5.json")
    overlay = folder / "gpt5-on-chat.yaml"
    overlay.parent.mkdir(parents=True, exist_ok=True)
    overlay.write_text(GPT5_ON_CHAT)
    out = folder / "gpt5-on-chat"
    done = subprocess.run([sys.executable, "-m", "capplan.cli", "compile", "--model", "gpt-5", "--presets-file",
                           str(overlay), "--out", str(out)], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"capplan compile failed:\n{done.stdout}{done.stderr}")
    chat = Plan.load(out / "gpt-5.json")
    for plan, protocol in ((bundled, "openai-responses"), (chat, "openai-chat")):
        assert plan.wire is not None and plan.wire.protocol == protocol and plan.wire.transport == "direct", (
            f"gpt-5: expected {protocol} on the direct transport, got {plan.wire}")
    return {"chat": chat, "responses": bundled}


#: which loopback server answers each wire
SERVER_FOR = {"chat": CHAT_SERVER, "responses": RESPONSES_SERVER}
#: long trials per turn-cost row of each wire: the Responses emulator holds every request to the
#: replay rules, verifying each replayed reasoning item (a few hundred at 1 000 messages), which on
#: two cores makes five trials take minutes; two still give ~16 turns near each size
TURN_COST_TRIALS = {"chat": 5, "responses": 2}


def direct_turn_cost(folder: Path, plan: Plan, server_module: str, trials: int = 5) -> dict[int, tuple[float, float]]:
    """``turn_cost`` for ``plan`` on the direct transport, against ``server_module`` in another
    process answering at once: this process's CPU per turn, HTTP client included."""
    assert plan.wire is not None and plan.wire.transport == "direct", f"{plan.model.key} does not send directly"
    server = subprocess.Popen([sys.executable, "-m", server_module, "0"], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        return turn_cost(folder, plan, trials, api_base=server.stdout.readline().strip())
    finally:
        server.kill()
        server.wait(timeout=10)


def print_direct_turn_cost(costs: dict[int, tuple[float, float]], wire: str) -> None:
    base = costs[TURN_COST_SIZES[0]][0]
    row = ", ".join(f"{size} messages {cost[0] * 1e3:.3f} ms ({cost[0] / base:.2f}x)" for size, cost in costs.items())
    print(f"turn cost (CPU) through the real loop, gpt-5 on {wire}, direct transport to a loopback server: {row} "
          "(target: 300 <= 1.5x 30)")


def chat_vs_responses(folder: Path, task: Path, plans: dict[str, Plan], trials: int, concurrency: int) -> None:
    """The throughput row for gpt-5 on each wire through the real path; prints wall, CPU per turn and the ratios."""
    ideal = trials * TURNS * LATENCY_S / concurrency
    figures: dict[str, tuple[float, float]] = {}
    for wire, plan in plans.items():
        wall, turns, cpu = throughput(task, plan, trials, concurrency, folder / f"gpt5-{wire}",
                                      server_module=SERVER_FOR[wire])
        assert turns == trials * TURNS, turns
        figures[wire] = (wall, cpu / turns)
        print(f"throughput (gpt-5 on {wire}, direct transport): {trials} trials x {TURNS} turns at concurrency "
              f"{concurrency}, 50 ms: {wall:.2f} s vs ideal {ideal:.2f} s = {wall / ideal:.2f}x; "
              f"CPU {cpu / turns * 1e3:.3f} ms per turn", flush=True)
    (chat_wall, chat_cpu), (resp_wall, resp_cpu) = figures["chat"], figures["responses"]
    print(f"  Responses / chat: wall {resp_wall / chat_wall:.2f}x, CPU per turn {resp_cpu / chat_cpu:.2f}x")


def print_turn_cost(costs: dict[int, tuple[float, float]], skipped: dict[int, tuple[float, float]]) -> None:
    rows = ((costs, "", 0), (costs, ", less the client's deepcopy", 1), (skipped, ", the client's deepcopy skipped", 0))
    for costs, label, which in rows:
        base = costs[TURN_COST_SIZES[0]][which]
        row = ", ".join(f"{size} messages {cost[which] * 1e3:.3f} ms ({cost[which] / base:.2f}x)"
                        for size, cost in costs.items())
        print(f"turn cost (CPU) through the real loop{label}: {row} (target: 300 <= 1.5x 30)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--overhead-trials", type=int, default=200)
    parser.add_argument("--turn-cost-only", action="store_true", help="Only the turn-cost rows.")
    parser.add_argument("--responses-only", action="store_true",
                        help="Only the gpt-5 rows: turn cost and throughput, chat completions vs Responses.")
    parser.add_argument("--repeats", type=int, default=1,
                        help="runs of each worker-count cell; the median and the range are printed (default 1)")
    parser.add_argument("--workers-only", action="store_true",
                        help="Only the worker-count rows: 1, 2, 4 … and all workers at 50 and 8 ms, gpt-5 on chat "
                             "through the direct transport and the keep-alive floor sender.")
    parser.add_argument("--bfcl", action="store_true",
                        help="Only the BFCL row: the 200 imported multi_turn_base tasks against a scripted agent with "
                             "50 ms latency at --concurrency 16 (benchmarks/bfcl_trial_loop.py; needs bfcl-eval).")
    parser.add_argument("--reference-cost", action="store_true",
                        help="run this workload once in the fast and once in the reference mode (CAPPLAN_REFERENCE=1), "
                             "each in a child process, and print the reference/fast ratios of wall and CPU time "
                             "(benchmarks/reference_cost.py)")
    parser.add_argument("--reference-rounds", type=int, default=1, help="rounds of --reference-cost (medians)")
    parser.add_argument("--work-dir", type=Path, default=None,
                        help="the folder the task files and run folders are made in (default: the system's temp "
                             "folder). A run folder's files cost what creating files costs there: put it where users' "
                             "runs go (the project folder) when the temp folder is a slower file system")
    args = parser.parse_args()
    if args.work_dir is not None and not args.work_dir.is_dir():
        parser.error(f"--work-dir {args.work_dir}: not a folder (make it first, or leave --work-dir out)")
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    if args.reference_cost:
        from benchmarks.reference_cost import report

        report(__file__, sys.argv[1:])
        return
    if args.bfcl:
        from benchmarks.bfcl_trial_loop import TRANSPORTS, bfcl_row, print_bfcl_row

        with tempfile.TemporaryDirectory(dir=args.work_dir) as tmp:
            for name in TRANSPORTS:
                print_bfcl_row(bfcl_row(Path(tmp) / name, concurrency=16, transport=name), 16, name)
        return
    os.environ.setdefault("OPENAI_API_KEY", "sk-benchmark-loopback")
    with tempfile.TemporaryDirectory(dir=args.work_dir) as tmp:
        task = write_task(Path(tmp) / "pack", turns=["add one", "and one more", "thanks, that's all"])
        plan = make_plan("openai", "agent-model", key="bench")
        gpt5 = gpt5_plans(Path(tmp) / "gpt5")
        if args.workers_only:
            workers_curve(Path(tmp), task, gpt5, args.trials, args.concurrency, args.repeats)
            return
        if not args.responses_only:
            print_turn_cost(turn_cost(Path(tmp) / "long", plan),
                            turn_cost(Path(tmp) / "long-no-copy", plan, skip_copy=True))
        for wire, wire_plan in gpt5.items():
            print_direct_turn_cost(direct_turn_cost(Path(tmp) / f"long-{wire}", wire_plan, SERVER_FOR[wire],
                                                    TURN_COST_TRIALS[wire]), wire)
        if args.turn_cost_only:
            return
        if args.responses_only:
            chat_vs_responses(Path(tmp), task, gpt5, args.trials, args.concurrency)
            return
        runner_s, executor_s = loop_overhead(task, plan, args.overhead_trials)
        print(f"loop overhead per agent turn (runner only): {runner_s * 1e3:.3f} ms = "
              f"{runner_s / LATENCY_S:.4f} of a 50 ms round trip (target <= 0.02)")
        print(f"  executor build + parse per turn (for context): {executor_s * 1e3:.3f} ms = "
              f"{executor_s / LATENCY_S:.4f} of 50 ms")
        ideal = args.trials * TURNS * LATENCY_S / args.concurrency
        for label, completion in (("runner + executor, keep-alive HTTP", KeepAliveCompletion()),
                                  ("through real litellm", None)):
            wall, turns, _ = throughput(task, plan, args.trials, args.concurrency, Path(tmp) / label.split()[0],
                                        completion)
            assert turns == args.trials * TURNS, turns
            print(f"throughput ({label}): {args.trials} trials x {TURNS} turns at concurrency {args.concurrency}: "
                  f"{wall:.2f} s vs ideal {ideal:.2f} s = {wall / ideal:.2f}x (target <= 1.3)")
        chat_vs_responses(Path(tmp), task, gpt5, args.trials, args.concurrency)
        workers_curve(Path(tmp), task, gpt5, args.trials, args.concurrency, args.repeats)
        cpu_ms = litellm_call_cpu_ms()
        floor = args.trials * TURNS * cpu_ms / 1e3
        print(f"  litellm.completion alone: {cpu_ms:.2f} ms of CPU per call (all threads, serial, no added latency); "
              f"{args.trials * TURNS} calls of it under one GIL: {floor:.1f} s = {floor / ideal:.2f}x the ideal "
              f"before any other work")
        print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
