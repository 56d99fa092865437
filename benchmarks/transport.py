"""Transport benchmark: CPU per call of six chat and five Responses senders, and trial throughput through `capplan trial run`.

CPU per call: the same request (one user message, two tools) against a loopback OpenAI-compatible
server in another process answering at once, for a kept-alive ``http.client`` connection,
``httpx.Client`` (POST + JSON parse), the openai SDK, ``litellm.completion``, capplan's
``Client.generate`` through the direct transport, and ``Client.generate`` through litellm. Each
figure is the median over rounds (5 by default) of the process CPU time (every thread, litellm's
background logging included) of 300 calls, divided by 300; the senders take turns within each
round, so a machine whose speed drifts slows all of them alike. Target: capplan direct at most
1.5x the bare httpx figure.

Responses rows, measured the same way: one request of the bundled ``gpt-5`` plan (protocol
``openai-responses``) — the second turn of a tool loop: instructions, two function tools, the user
message, the model's reasoning item (its ``encrypted_content`` replayed verbatim) before its
``function_call``, and the ``function_call_output`` — sent to a loopback Responses server in
another process (``benchmarks/responses_server.py``: the strict emulator, which verifies the
replayed reasoning item on every call and answers with a new one) by capplan's ``Client.generate``
on the direct transport, ``httpx.Client`` (the same body's bytes, JSON parse), the openai SDK's
``client.responses.create`` (the same body), ``Client.generate`` through ``transport: litellm``
(``litellm.responses``, the plan compiled from the catalogue's gpt-5 entry with that one field
added), and bare ``litellm.responses`` with the same kwargs. 100 calls a round by default
(``--responses-calls``): the SDK and litellm rows cost ~13 ms a call, and the table stays ~25 s.

Throughput: 500 trials x 6 turns at ``--concurrency 32`` through ``capplan trial run`` (the click
command, in this process, after a warm-up run so that no figure includes importing litellm)
against a loopback server answering after 50 ms, then 8 ms, once with a plan compiled for the
direct transport and once with the same model compiled with ``transport: litellm``. The ratio is
the run's wall time over the ideal ``trials x turns x latency / concurrency``, in one process
(``--workers 1``: ``benchmarks/trial_loop.py --workers-only`` has the rows for 2 and all workers); each row is run
``--repeats`` times (3 by default) and reports the median with the range, because on a shared
2-core machine the same run's CPU varies by a fifth from one minute to the next. Target at 50 ms:
direct at most 1.6x.

Run from the project root:  python benchmarks/transport.py [--rounds 5] [--calls 300] [--responses-calls 100]
                            [--trials 500] [--repeats 3] [--skip-throughput] [--only chat|responses]
                            [--reference-cost [--reference-rounds N]]

``--reference-cost`` runs the chosen workload once per mode and prints what the reference mode
(every speed-only path off) costs against the fast one (``benchmarks/reference_cost.py``).
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
from capplan.executor.messages import ChatRequest, ReasoningIn  # noqa: E402
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


#: the chat benchmark server, and the Responses one (the strict emulator answering as the same scripted agent)
CHAT_SERVER = "tests.fake_provider"
RESPONSES_SERVER = "benchmarks.responses_server"
#: the bundled plan the Responses rows send (protocol openai-responses, direct transport)
RESPONSES_PLAN = ROOT / "golden" / "plans" / "gpt-5.json"


class Server:
    """A benchmark server module in its own process (its CPU is not this process's), answering after ``latency_s``."""

    def __init__(self, latency_s: float, module: str = CHAT_SERVER) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", module, str(latency_s)], cwd=ROOT,
                                        stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        self.base = self.process.stdout.readline().strip()  # http://127.0.0.1:P/v1

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.process.kill()
        self.process.wait(timeout=10)


def compile_plans(folder: Path) -> dict[str, Path]:
    """The benchmark model compiled twice: direct (the default on an OpenAI route) and ``transport: litellm``;
    and the catalogue's gpt-5 entry compiled with ``transport: litellm`` (``responses-litellm``)."""
    config = folder / "run.yaml"
    config.write_text(
        f"models:\n  direct:\n    provider: openai\n    name: {MODEL}\n"
        f"  via-litellm:\n    provider: openai\n    name: {MODEL}\n    transport: litellm\n"
        # presets/catalogue.yaml's gpt-5 entry, on litellm's Responses bridge
        "  gpt-5:\n    provider: openai\n    name: gpt-5\n    reasoning: {mode: adaptive, effort_hint: medium}\n"
        "    capabilities: {dict_map_prompt_hints: true}\n    transport: litellm\n")
    out = folder / "plans"
    done = subprocess.run([sys.executable, "-m", "capplan.cli", "compile", "--config", str(config), "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"capplan compile failed:\n{done.stdout}{done.stderr}")
    return {"direct": out / "direct.json", "litellm": out / "via-litellm.json", "responses-litellm": out / "gpt-5.json"}


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


def responses_plans(plans: dict[str, Path]) -> tuple[Plan, Plan]:
    """(the bundled gpt-5 plan, the same compiled with ``transport: litellm``): the same request on both."""
    bundled = Plan.load(RESPONSES_PLAN)
    via_litellm = Plan.load(plans["responses-litellm"])
    for plan, transport in ((bundled, "direct"), (via_litellm, "litellm")):
        assert plan.wire is not None and plan.wire.protocol == "openai-responses" and plan.wire.transport == transport, (
            f"{plan.model.key}: expected an openai-responses plan on the {transport} transport, got {plan.wire}")
    a, b = bundled.body(), via_litellm.body()
    assert {**a["wire"], "transport": "litellm"} == b["wire"], "the litellm gpt-5 plan's wire differs beyond transport"
    for part in ("policies", "request_defaults", "param_value_rules", "allowed_openai_params", "loop", "pricing"):
        assert a.get(part) == b.get(part), f"the litellm gpt-5 plan differs from the bundled one in {part!r}"
    return bundled, via_litellm


def tool_loop_request(client: Client) -> ChatRequest:
    """The second turn of a tool loop, as the trial loop writes it: the first answer's call, with its
    reasoning (the encrypted item the server minted), then the tool's result."""
    first = client.generate(REQUEST)
    if not first.tool_calls or first.reasoning is None:
        raise SystemExit(f"the Responses server answered no tool call with reasoning: {first.text!r}")
    assistant: dict[str, Any] = {
        "role": "assistant", "content": first.text or None,
        "tool_calls": [{"id": call.id, "type": "function", "function": {"name": call.name,
                                                                        "arguments": call.raw_arguments}}
                       for call in first.tool_calls],
        "reasoning": ReasoningIn.from_structured(first.reasoning).model_dump(mode="json", exclude_none=True),
    }
    tool = {"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": '{"value": 1}'}
    request = REQUEST.model_copy(update={"messages": [*REQUEST.messages, *ChatRequest.model_validate(
        {"messages": [assistant, tool]}).messages]})
    kinds = [item.get("type") for item in client.build(request).kwargs["input"]]
    assert kinds == ["message", "reasoning", "function_call", "function_call_output"], kinds
    return request


def responses_senders(base: str, plans: dict[str, Path]) -> dict[str, Callable[[], Any]]:
    """One zero-argument call per Responses sender, all sending the same request."""
    import litellm
    import openai

    bundled, via_litellm_plan = responses_plans(plans)
    direct = Client(bundled, api_base=base)
    assert direct.direct is not None, "the bundled gpt-5 plan is not on the direct transport"
    via_litellm = Client(via_litellm_plan, api_base=base)
    assert via_litellm.direct is None and via_litellm.calls_through_litellm
    request_in = tool_loop_request(direct)
    built = direct.build(request_in).kwargs
    request = direct.direct.mapper.map(built)
    content, headers, body = request.content(), request.headers, request.body
    assert via_litellm.build(request_in).kwargs.keys() == built.keys()
    pooled = httpx.Client()
    sdk = openai.OpenAI(base_url=base, api_key=KEY, max_retries=0)
    litellm_kwargs = via_litellm.build(request_in).kwargs

    def with_httpx() -> Any:
        answer = pooled.post(request.url, content=content, headers=headers)
        answer.raise_for_status()  # the emulator refuses a request that breaks a Responses rule
        return answer.json()

    def with_sdk() -> Any:
        return sdk.responses.create(**body)

    def with_litellm() -> Any:
        return litellm.responses(**litellm_kwargs)

    return {
        "httpx.Client POST + JSON parse": with_httpx,
        "openai SDK responses.create": with_sdk,
        "litellm.responses": with_litellm,
        "capplan Client.generate, direct": lambda: direct.generate(request_in),
        "capplan Client.generate, via litellm": lambda: via_litellm.generate(request_in),
    }


def cpu_per_call(plans: dict[str, Path], rounds: int, calls: int, *, responses: bool = False) -> dict[str, list[float]]:
    """ms of process CPU per call, one figure per round, for each sender (the Responses ones with ``responses``)."""
    with Server(0.0, RESPONSES_SERVER if responses else CHAT_SERVER) as server:
        calls_by = (responses_senders if responses else senders)(server.base, plans)
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
                                     str(trials), "--concurrency", str(concurrency), "--api-base", base,
                                     "--workers", "1"])
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


def print_cpu_table(title: str, figures: dict[str, list[float]], rounds: int, calls: int) -> dict[str, float]:
    print(f"{title} CPU per call (ms, median of {rounds} x {calls} calls; min-max over rounds):")
    median = {name: statistics.median(values) for name, values in figures.items()}
    for name, values in figures.items():
        print(f"  {name:40s} {median[name]:6.3f}  ({min(values):.3f}-{max(values):.3f})")
    return median


def paired(figures: dict[str, list[float]], over: str, under: str) -> float:
    """The median over rounds of one sender's figure over another's in the same round."""
    return statistics.median(a / b for a, b in zip(figures[over], figures[under]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--responses-calls", type=int, default=100,
                        help="calls per round of the Responses table (its litellm and SDK rows cost ~13 ms a call)")
    parser.add_argument("--trials", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3, help="runs per throughput row (the median is reported)")
    parser.add_argument("--skip-throughput", action="store_true", help="only the CPU-per-call tables")
    parser.add_argument("--only", choices=("chat", "responses"),
                        help="only this protocol's CPU-per-call table (no throughput)")
    parser.add_argument("--reference-cost", action="store_true",
                        help="run this workload once in the fast and once in the reference mode (CAPPLAN_REFERENCE=1), "
                             "each in a child process, and print the reference/fast ratios of wall and CPU time "
                             "(benchmarks/reference_cost.py)")
    parser.add_argument("--reference-rounds", type=int, default=1, help="rounds of --reference-cost (medians)")
    args = parser.parse_args()
    if args.reference_cost:
        from benchmarks.reference_cost import report

        report(__file__, sys.argv[1:])
        return
    # wall-time ratios assume a core to spare; the load says whether there was one
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        plans = compile_plans(folder)
        httpx_row, direct_row, litellm_row = ("httpx.Client POST + JSON parse", "capplan Client.generate, direct",
                                              "capplan Client.generate, via litellm")
        if args.only != "responses":
            figures = cpu_per_call(plans, args.rounds, args.calls)
            median = print_cpu_table("chat completions:", figures, args.rounds, args.calls)
            bare, ours = median[httpx_row], median[direct_row]
            print(f"  capplan direct / httpx: {ours / bare:.2f}x (paired per round: "
                  f"{paired(figures, direct_row, httpx_row):.2f}x; target <= 1.5)")
            print(f"  capplan via litellm / capplan direct: {median[litellm_row] / ours:.2f}x")
        if args.only != "chat":
            figures = cpu_per_call(plans, args.rounds, args.responses_calls, responses=True)
            median = print_cpu_table("Responses (gpt-5, tool loop replaying an encrypted reasoning item):", figures,
                                     args.rounds, args.responses_calls)
            bare, ours = median[httpx_row], median[direct_row]
            print(f"  capplan direct / httpx: {ours / bare:.2f}x (paired per round: "
                  f"{paired(figures, direct_row, httpx_row):.2f}x; target <= 1.5)")
            print(f"  openai SDK / capplan direct: {median['openai SDK responses.create'] / ours:.2f}x")
            print(f"  litellm.responses / capplan direct: {median['litellm.responses'] / ours:.2f}x")
            print(f"  capplan via litellm / litellm.responses: {median[litellm_row] / median['litellm.responses']:.2f}x; "
                  f"/ capplan direct: {median[litellm_row] / ours:.2f}x")
        if args.skip_throughput or args.only:
            return
        chat_plans = {"direct": plans["direct"], "litellm": plans["litellm"]}
        print("throughput through capplan trial run (wall / ideal):")
        fifty = throughput(folder, chat_plans, 0.05, args.trials, args.concurrency, args.repeats)
        print(f"  at 50 ms: direct {fifty['direct']:.2f}x (target <= 1.6), litellm {fifty['litellm']:.2f}x")
        eight = throughput(folder, chat_plans, 0.008, args.trials, args.concurrency, args.repeats)
        print(f"  at 8 ms: direct {eight['direct']:.2f}x, litellm {eight['litellm']:.2f}x")


if __name__ == "__main__":
    main()
