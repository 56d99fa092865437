"""Transport benchmark: CPU per call of six senders, and trial throughput through `capplan trial run`.

CPU per call: the same request (one user message, two tools) against a loopback OpenAI-compatible
server in another process answering at once, for a kept-alive ``http.client`` connection,
``httpx.Client`` (POST + JSON parse), the openai SDK, ``litellm.completion``, capplan's
``Client.generate`` through the direct transport, and ``Client.generate`` through litellm. Each
figure is the median over rounds (5 by default) of the process CPU time (every thread, litellm's
background logging included) of 300 calls, divided by 300; the senders take turns within each
round, so a machine whose speed drifts slows all of them alike. Target: capplan direct at most
1.5x the bare httpx figure.

Throughput: 500 trials x 6 turns at ``--concurrency 32`` through ``capplan trial run`` (the click
command, in this process, after a warm-up run so that no figure includes importing litellm)
against a loopback server answering after 50 ms, then 8 ms, once with a plan compiled for the
direct transport and once with the same model compiled with ``transport: litellm``. The ratio is
the run's wall time over the ideal ``trials x turns x latency / concurrency``; each row is run
``--repeats`` times (3 by default) and reports the median with the range, because on a shared
2-core machine the same run's CPU varies by a fifth from one minute to the next. Target at 50 ms:
direct at most 1.6x.

Run from the project root:  python benchmarks/transport.py [--rounds 5] [--calls 300] [--trials 500] [--repeats 3]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.pop("LLM_PROXY_BASE_URL", None)  # a gateway would reroute the calls away from the loopback server
KEY = "sk-benchmark-loopback"
os.environ["OPENAI_API_KEY"] = KEY

import httpx  # noqa: E402

from capplan.executor.client import Client, _litellm_completion  # noqa: E402
from capplan.executor.messages import ChatRequest  # noqa: E402
from capplan.executor.plan import Plan  # noqa: E402
from tests.trials.helpers import write_task  # noqa: E402

TURNS = 6  # three scripted user turns, each answered by a tool turn and a text turn
MODEL = "agent-model"

TOOLS = [
    {"type": "function", "function": {"name": "add", "description": "Add to the counter.", "parameters": {
        "type": "object", "properties": {"amount": {"type": "integer"}}, "required": ["amount"]}}},
    {"type": "function", "function": {"name": "reset", "description": "Reset the counter.", "parameters": {
        "type": "object", "properties": {}}}},
]
REQUEST = ChatRequest.model_validate({"system": "You keep a counter.", "tools": TOOLS,
                                      "messages": [{"role": "user", "content": "add one"}]})


class Server:
    """``tests.trials.agent_server`` in its own process (its CPU is not this process's), answering after ``latency_s``."""

    def __init__(self, latency_s: float) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "tests.trials.agent_server", str(latency_s)], cwd=ROOT,
                                        stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        self.base = self.process.stdout.readline().strip()  # http://127.0.0.1:P/v1

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.process.kill()
        self.process.wait(timeout=10)


def compile_plans(folder: Path) -> dict[str, Path]:
    """The benchmark model compiled twice: direct (the default on an OpenAI route) and ``transport: litellm``."""
    config = folder / "run.yaml"
    config.write_text(
        f"models:\n  direct:\n    provider: openai\n    name: {MODEL}\n"
        f"  via-litellm:\n    provider: openai\n    name: {MODEL}\n    transport: litellm\n")
    out = folder / "plans"
    done = subprocess.run([sys.executable, "-m", "capplan.cli", "compile", "--config", str(config), "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"capplan compile failed:\n{done.stdout}{done.stderr}")
    return {"direct": out / "direct.json", "litellm": out / "via-litellm.json"}


def senders(base: str, plans: dict[str, Path]) -> dict[str, Callable[[], Any]]:
    """One zero-argument call per sender, all sending the same request."""
    import litellm
    import openai

    direct = Client(Plan.load(plans["direct"]), api_base=base)
    assert direct.direct is not None, "the benchmark plan is not on the direct transport"
    via_litellm = Client(Plan.load(plans["direct"]), api_base=base, completion=_litellm_completion())
    request = direct.direct.mapper.map(direct.build(REQUEST).kwargs)
    content, headers = request.content(), request.headers
    url = urllib.parse.urlsplit(request.url)
    connection = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port)
    pooled = httpx.Client()
    sdk = openai.OpenAI(base_url=base, api_key=KEY, max_retries=0)
    kwargs = direct.build(REQUEST).kwargs
    body = request.body

    def raw() -> Any:
        connection.request("POST", url.path, body=content, headers=headers)
        return json.loads(connection.getresponse().read())

    def with_httpx() -> Any:
        return pooled.post(request.url, content=content, headers=headers).json()

    def with_sdk() -> Any:
        return sdk.chat.completions.create(model=MODEL, messages=body["messages"], tools=body["tools"])

    def with_litellm() -> Any:
        return litellm.completion(model=f"openai/{MODEL}", messages=kwargs["messages"], tools=kwargs["tools"],
                                  api_base=base, api_key=KEY, max_retries=0, num_retries=0)

    return {
        "raw http.client, kept alive": raw,
        "httpx.Client POST + JSON parse": with_httpx,
        "openai SDK chat.completions.create": with_sdk,
        "litellm.completion": with_litellm,
        "capplan Client.generate, direct": lambda: direct.generate(REQUEST),
        "capplan Client.generate, via litellm": lambda: via_litellm.generate(REQUEST),
    }


def cpu_per_call(plans: dict[str, Path], rounds: int, calls: int) -> dict[str, list[float]]:
    """ms of process CPU per call, one figure per round, for each sender."""
    with Server(0.0) as server:
        calls_by = senders(server.base, plans)
        for call in calls_by.values():  # warm every path: imports, pools, caches
            for _ in range(20):
                call()
        time.sleep(0.5)
        figures: dict[str, list[float]] = {name: [] for name in calls_by}
        for _ in range(rounds):
            for name, call in calls_by.items():
                started = time.process_time()
                for _ in range(calls):
                    call()
                time.sleep(0.3)  # litellm finishes its success logging on a thread of its own after returning
                figures[name].append((time.process_time() - started) / calls * 1e3)
        return figures


def trial_run(pack: Path, plan: Path, out: Path, base: str, trials: int, concurrency: int) -> tuple[float, float]:
    """(wall, CPU) seconds of ``capplan trial run`` (in this process, every thread) for ``trials`` trials of the pack."""
    from click.testing import CliRunner

    from capplan.cli import main

    started, cpu = time.perf_counter(), time.process_time()
    done = CliRunner().invoke(main, ["trial", "run", str(pack), "--plan", str(plan), "--out", str(out), "--trials",
                                     str(trials), "--concurrency", str(concurrency), "--api-base", base])
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    if done.exit_code != 0:
        raise SystemExit(f"capplan trial run failed ({done.exit_code}):\n{done.output}")
    finished = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines() if line.strip()]
    turns = sum(int(line.get("turns") or 0) for line in finished)
    if len(finished) != trials or turns != trials * TURNS:
        raise SystemExit(f"expected {trials} trials of {TURNS} turns, got {len(finished)} trials, {turns} turns")
    return wall, cpu


def throughput(folder: Path, plans: dict[str, Path], latency_s: float, trials: int, concurrency: int,
               repeats: int) -> dict[str, float]:
    """Median wall / ideal over ``repeats`` runs for each transport at ``latency_s``."""
    pack = folder / "pack"
    if not pack.exists():
        write_task(pack, turns=["add one", "and one more", "thanks, that's all"])
    ideal = trials * TURNS * latency_s / concurrency
    ratios: dict[str, float] = {}
    with Server(latency_s) as server:
        for name, plan in plans.items():
            tag = f"{name}-{int(latency_s * 1000)}ms"
            trial_run(pack, plan, folder / f"warm-{tag}", server.base, 2, 2)  # imports and pools, not measured
            runs = [trial_run(pack, plan, folder / f"run-{tag}-{i}", server.base, trials, concurrency)
                    for i in range(repeats)]
            walls, cpus = [wall for wall, _ in runs], [cpu for _, cpu in runs]
            wall, cpu = statistics.median(walls), statistics.median(cpus)
            ratios[name] = wall / ideal
            # CPU per turn is what the run itself costs, whatever else the machine is doing
            print(f"  {name:8s} {trials} trials x {TURNS} turns at --concurrency {concurrency}, {latency_s * 1000:.0f} ms: "
                  f"{wall:.2f} s vs ideal {ideal:.2f} s = {wall / ideal:.2f}x (median of {repeats}: "
                  f"{min(walls) / ideal:.2f}-{max(walls) / ideal:.2f}x); CPU {cpu / (trials * TURNS) * 1e3:.2f} ms per turn "
                  f"({min(cpus) / (trials * TURNS) * 1e3:.2f}-{max(cpus) / (trials * TURNS) * 1e3:.2f})", flush=True)
    return ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--trials", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3, help="runs per throughput row (the median is reported)")
    parser.add_argument("--skip-throughput", action="store_true", help="only the CPU-per-call table")
    args = parser.parse_args()
    # wall-time ratios assume a core to spare; the load says whether there was one
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        plans = compile_plans(folder)
        figures = cpu_per_call(plans, args.rounds, args.calls)
        print(f"CPU per call (ms, median of {args.rounds} x {args.calls} calls; min-max over rounds):")
        median = {name: statistics.median(values) for name, values in figures.items()}
        for name, values in figures.items():
            print(f"  {name:40s} {median[name]:6.3f}  ({min(values):.3f}-{max(values):.3f})")
        bare = median["httpx.Client POST + JSON parse"]
        ours = median["capplan Client.generate, direct"]
        paired = statistics.median(
            d / h for d, h in zip(figures["capplan Client.generate, direct"], figures["httpx.Client POST + JSON parse"]))
        print(f"  capplan direct / httpx: {ours / bare:.2f}x (paired per round: {paired:.2f}x; target <= 1.5)")
        print(f"  capplan via litellm / capplan direct: {median['capplan Client.generate, via litellm'] / ours:.2f}x")
        if args.skip_throughput:
            return
        print("throughput through capplan trial run (wall / ideal):")
        fifty = throughput(folder, plans, 0.05, args.trials, args.concurrency, args.repeats)
        print(f"  at 50 ms: direct {fifty['direct']:.2f}x (target <= 1.6), litellm {fifty['litellm']:.2f}x")
        eight = throughput(folder, plans, 0.008, args.trials, args.concurrency, args.repeats)
        print(f"  at 8 ms: direct {eight['direct']:.2f}x, litellm {eight['litellm']:.2f}x")


if __name__ == "__main__":
    main()
