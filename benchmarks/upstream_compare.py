"""capplan's request path side by side with tolokaforge 0.29.0's, as ratios measured in one run.

For an OpenAI, an Anthropic, a Gemini and two OpenRouter models of the bundled catalogue, the
same conversation and tools are built into litellm kwargs by both engines (nothing is sent):

* steady build: 16 tools the client has seen, a 3-message conversation it has not;
* first build: a new client's first request (tool cache miss), 16 tools;
* history: one trial turn (two new messages) on a 30- and a 300-message history;
* tools: steady and first build with 2 / 16 / 64 / 256 tools;
* client: ``Plan.load`` + ``Client`` against ``LLMClient(...)``.

Rounds alternate between the engines so load drift hits both alike; each engine's figure is the
median over rounds of the per-round median, and the ratio is the median over rounds of the two
engines' figures in the same round (a round's two figures are seconds apart, while the machine's
speed drifts across rounds). The upstream side runs in a worker process under the
interpreter given with ``--upstream-python`` (see ``upstream_worker.py``); without it the script
prints capplan's own figures. Targets are checked and printed beside each ratio.

Run from the project root:
    python benchmarks/upstream_compare.py --upstream-python /path/to/tolokaforge-venv/bin/python
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cpu_pinning import CPU_HELP, pin_to_one_cpu  # noqa: E402
from capplan.executor.client import Client  # noqa: E402
from capplan.executor.messages import ChatRequest, ToolSpec, load_request  # noqa: E402
from capplan.executor.plan import Plan  # noqa: E402

#: catalogue key -> the sanitiser question (True where the plan rewrites tool schemas)
MODELS = {
    "gpt-5": True,
    "claude-opus-4.7": False,
    "gemini-3.1-pro-preview": True,
    "claude-sonnet-4.6-openrouter": False,
    "grok-4": True,
}
SYSTEM = "You are a billing assistant. Use the tools; answer briefly."
ENV = {"OPENAI_API_KEY": "sk-benchmark", "ANTHROPIC_API_KEY": "sk-benchmark", "GEMINI_API_KEY": "sk-benchmark",
       "OPENROUTER_API_KEY": "sk-benchmark", "XAI_API_KEY": "sk-benchmark"}


def tool_list(count: int) -> list[dict[str, Any]]:
    """``count`` finite-schema tools from the golden conversations, renamed to stay distinct."""
    base: dict[str, dict[str, Any]] = {}
    for path in sorted((ROOT / "golden" / "conversations").glob("*.json")):
        for tool in load_request(path).tool_dicts():
            if tool["function"]["name"] != "submit_tree":  # recursive: strict refuses it by design
                base[tool["function"]["name"]] = tool
    tools = []
    for i in range(count):
        tool = json.loads(json.dumps(list(base.values())[i % len(base)]))
        tool["function"]["name"] = f"{tool['function']['name']}_{i}"
        tools.append(tool)
    return tools


def history(length: int, tool_name: str) -> list[dict[str, Any]]:
    """A trial-shaped history: a user turn, then tool-call / tool-result pairs, ``length`` messages."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Invoice ACME for two hours of consulting."}]
    turn = 0
    while len(messages) < length:
        messages += turn_messages(turn, tool_name)
        turn += 1
    return messages[:length]


def turn_messages(turn: int, tool_name: str) -> list[dict[str, Any]]:
    """One trial turn: an assistant tool call and its result."""
    call = f"call_{turn}"
    return [
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": call, "type": "function", "function": {"name": tool_name, "arguments": json.dumps({"turn": turn})}}]},
        {"role": "tool", "tool_call_id": call, "content": f"result of step {turn}: " + "x" * 200},
    ]


def median_s(fn: Callable[[], Any], repeat: int) -> float:
    """Median wall time of ``fn`` over ``repeat`` calls."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


class Capplan:
    """capplan's side of every measure."""

    def __init__(self, tools: list[dict[str, Any]]) -> None:
        self.specs = [ToolSpec.model_validate(t) for t in tools]

    def plan_path(self, key: str) -> Path:
        return ROOT / "golden" / "plans" / f"{key}.json"

    def client(self, key: str) -> Client:
        return Client(Plan.load(self.plan_path(key)), env=ENV)

    def request(self, messages: list[dict[str, Any]], tools: int) -> ChatRequest:
        return ChatRequest(system=SYSTEM, tools=self.specs[:tools], messages=messages)  # type: ignore[arg-type]

    def time(self, what: str, key: str, tools: int, hist: list[dict[str, Any]], new: list[dict[str, Any]],
             repeat: int) -> float:
        # each measure starts from a collected heap (the upstream worker does the same): the clients
        # and requests an earlier row left behind are not collected inside this row's timings
        gc.collect()
        if what == "client":
            path = self.plan_path(key)
            return median_s(lambda: Client(Plan.load(path), env=ENV), repeat)
        if what == "first":
            samples = []
            for _ in range(repeat):
                client, request = self.client(key), self.request(hist, tools)
                start = time.perf_counter()
                client.build(request)
                samples.append(time.perf_counter() - start)
            return statistics.median(samples)
        client = self.client(key)
        if what == "steady":
            client.build(self.request(hist, tools))
            # a conversation the client has not seen: its messages are converted on this call
            requests = iter([self.request(hist, tools) for _ in range(repeat)])
            return median_s(lambda: client.build(next(requests)), repeat)
        if what == "history":
            base = self.request(hist, tools)
            client.build(base)
            return median_s(lambda: client.build(base.extended(new)), repeat)
        raise ValueError(what)


class Upstream:
    """tolokaforge's side, in a worker process under its own interpreter."""

    def __init__(self, python: str, models: dict[str, dict[str, Any]], tools: list[dict[str, Any]]) -> None:
        self.proc = subprocess.Popen(
            [python, str(ROOT / "benchmarks" / "upstream_worker.py")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )
        self.ask({"op": "setup", "models": models, "tools": tools, "system": SYSTEM})

    def ask(self, cmd: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"upstream worker exited (code {self.proc.wait()})")
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            raise SystemExit(f"upstream worker: {answer['error']}")
        return answer

    def time(self, what: str, key: str, tools: int, hist: list[dict[str, Any]], new: list[dict[str, Any]],
             repeat: int) -> float:
        answer = self.ask({"op": "time", "what": what, "model": key, "tools": tools, "history": hist,
                           "new": new, "repeat": repeat})
        seconds: float = answer["seconds"]
        return seconds

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


@dataclass
class Measure:
    label: str
    what: str
    tools: int
    history: int
    repeat: int
    target: Callable[[bool], float | None]


def measures(quick: bool) -> list[Measure]:
    """Every row of the table; ``quick`` cuts repeats for a smoke run."""
    r = 5 if quick else 1

    def steady(sanitised: bool) -> float:
        return 0.25 if sanitised else 0.5

    rows = [
        Measure("steady build (16 tools, 3 messages)", "steady", 16, 3, 400 // r, steady),
        Measure("first build (16 tools, new client)", "first", 16, 3, 80 // r, lambda s: 2.0),
        Measure("trial turn on a 30-message history", "history", 16, 30, 300 // r, lambda s: None),
        Measure("trial turn on a 300-message history", "history", 16, 300, 200 // r, lambda s: None),
        Measure("plan load + client vs LLMClient(...)", "client", 0, 0, 200 // r, lambda s: 0.5),
    ]
    for n in (2, 64, 256):
        rows.append(Measure(f"steady build, {n} tools", "steady", n, 3, max(20, (4000 // n) // r), steady))
    for n in (2, 64, 256):
        rows.append(Measure(f"first build, {n} tools", "first", n, 3, max(5, (400 // n) // r), lambda s: 2.0))
    return rows


def catalogue_blocks() -> dict[str, dict[str, Any]]:
    """The run-config model block of each benchmarked model, as the bundled catalogue declares it."""
    from ruamel.yaml import YAML

    models = YAML(typ="safe").load((ROOT / "presets" / "catalogue.yaml").read_text())["models"]
    return {key: dict(models[key]) for key in MODELS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--upstream-python", help="interpreter with tolokaforge==0.29.0 installed")
    parser.add_argument("--rounds", type=int, default=9, help="alternating rounds per figure (default 9)")
    parser.add_argument("--quick", action="store_true", help="fewer calls per round (a smoke run)")
    parser.add_argument("--models", nargs="*", default=list(MODELS), choices=list(MODELS), metavar="KEY")
    parser.add_argument("--cpu", type=int, default=None, help=CPU_HELP)
    args = parser.parse_args()
    pinned = pin_to_one_cpu(args.cpu)
    if pinned is not None:
        print(f"both engines pinned to CPU {pinned}")

    tools = tool_list(256)
    tool_name = tools[0]["function"]["name"]
    ours = Capplan(tools)
    theirs = Upstream(args.upstream_python, catalogue_blocks(), tools) if args.upstream_python else None
    history_cost: dict[tuple[str, int], float] = {}
    print(f"{'measure':44} {'model':30} {'capplan':>11} {'upstream':>11} {'ratio':>7}  target")
    failed = 0
    for row in measures(args.quick):
        hist = history(row.history, tool_name)
        new = turn_messages(row.history, tool_name)
        for key in args.models:
            mine: list[float] = []
            upstream: list[float] = []
            for _ in range(args.rounds):
                mine.append(ours.time(row.what, key, row.tools, hist, new, row.repeat))
                if theirs is not None:
                    upstream.append(theirs.time(row.what, key, row.tools, hist, new, row.repeat))
            c = statistics.median(mine)
            if row.what == "history":
                history_cost[(key, row.history)] = c
            line = f"{row.label:44} {key:30} {c * 1e6:9.1f}us"
            if upstream:
                u = statistics.median(upstream)
                # each round's two figures are seconds apart; across rounds the machine's speed drifts
                ratio = statistics.median(m / t for m, t in zip(mine, upstream))
                target = row.target(MODELS[key])
                verdict = ""
                if target is not None:
                    ok = ratio <= target
                    failed += not ok
                    verdict = f"<= {target}x {'ok' if ok else 'MISSED'}"
                line += f" {u * 1e6:9.1f}us {ratio:6.2f}x  {verdict}"
            print(line, flush=True)
    print()
    for key in args.models:
        if (key, 30) in history_cost and (key, 300) in history_cost:
            growth = history_cost[(key, 300)] / history_cost[(key, 30)]
            print(f"trial turn cost, 300- over 30-message history, {key}: {growth:.2f}x "
                  f"(linear in the new messages: close to 1x, not 10x)")
    if theirs is not None:
        theirs.close()
        print(f"\n{failed} target(s) missed")


if __name__ == "__main__":
    main()
