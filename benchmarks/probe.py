"""``capplan probe``: what one route's full question set costs, and the dry run of the bundled catalogue.

1. The bundled gpt-5 plan probed against the OpenAI Responses emulator (loopback, the corpus's
   real refusals), in process, on the direct transport: the requests sent, the tokens the route
   reported (input and output, from each answer's ``usage``), the input-token bound the budget
   reserves, and the wall time of planning and of sending, each the median of ``--repeat`` runs.
2. The dry run over the bundled catalogue at list prices (``presets/pricing.json``): requests
   planned, their summed worst-case cost, and the plans with no price (their cost is unknown, so
   ``--max-cost`` refuses them). Dummy values stand in for the endpoint and key variables two
   plans need to be built at all (nothing is sent).
3. The same two figures for ``--family carriers`` and ``--family cache`` (the replay eval's text
   step on the route, and the plan's request with a cacheable prefix sent twice), apart, because
   they are opt-in: they cost more than every parameter question together.

Run: ``python benchmarks/probe.py [--repeat N]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from capplan.compiler.compile import compile_paths  # noqa: E402
from capplan.conformance.corpus import load_corpus  # noqa: E402
from capplan.conformance.emulators.openai_responses import ResponsesEmulator  # noqa: E402
from capplan.core.errors import UserError  # noqa: E402
from capplan.executor.client import Client  # noqa: E402
from capplan.executor.cost_bound import input_tokens_bound  # noqa: E402
from capplan.executor.plan import Plan  # noqa: E402
from capplan.probes.families import FamilyPlans, plan_families, run_families  # noqa: E402
from capplan.probes.runner import plan_probe, run_probe, unprobeable_reason  # noqa: E402

GPT5 = ROOT / "golden" / "plans" / "gpt-5.json"
ENV = {"OPENAI_API_KEY": "sk-benchmark-0123456789"}
#: variables two bundled plans need before a request can be built (the dry run sends nothing)
DUMMY_ROUTE_ENV = {"NOVA_API_KEY": "nova-benchmark-0123456789", "AZURE_AI_API_BASE": "https://azure.invalid/v1"}


def one_route(repeat: int) -> None:
    corpus = load_corpus()
    plan = Plan.load(GPT5)
    planning: list[float] = []
    sending: list[float] = []
    for _ in range(repeat):
        with ResponsesEmulator(corpus.rules, route="openai") as emu:
            started = time.perf_counter()
            client = Client(plan, env=ENV, api_base=emu.base_url + "/v1")
            probe = plan_probe(client)
            planned = time.perf_counter()
            record = run_probe(client, probe, date="benchmark")
            done = time.perf_counter()
            exchanges = list(emu.exchanges)
        planning.append(planned - started)
        sending.append(done - planned)
    usage_in = sum(int((x.answer.get("usage") or {}).get("input_tokens", 0)) for x in exchanges
                   if isinstance(x.answer, dict))
    usage_out = sum(int((x.answer.get("usage") or {}).get("output_tokens", 0)) for x in exchanges
                    if isinstance(x.answer, dict))
    bound = sum(input_tokens_bound(p.built.kwargs) for p in probe.to_send if p.built is not None)
    counts = record.counts()
    print(f"gpt-5 on the Responses emulator: {len(probe.questions)} questions, {record.sent} requests sent "
          f"({counts['accepted']} accepted, {counts['refused']} refused, {counts['skipped']} skipped)")
    print(f"  tokens the route reported: {usage_in} input, {usage_out} output; the budget's input bound: {bound}")
    print(f"  worst-case cost of the set at gpt-5's list price: ${probe.worst_usd():.6f}")
    print(f"  wall time, median of {repeat}: planning {statistics.median(planning) * 1000:.1f} ms, "
          f"sending {statistics.median(sending) * 1000:.1f} ms")
    families(plan)


def _usage_tokens(answer: object, name: str) -> int:
    usage = answer.get("usage") if isinstance(answer, dict) else None
    value = usage.get(name, 0) if isinstance(usage, dict) else 0
    return value if isinstance(value, int) else 0


def families(plan: Plan) -> None:
    """The carrier and cache families of the gpt-5 plan on the same emulator, once."""
    corpus = load_corpus()
    with ResponsesEmulator(corpus.rules, route="openai") as emu:
        client = Client(plan, env=ENV, api_base=emu.base_url + "/v1")
        probe = plan_probe(client)
        started = time.perf_counter()
        planned = plan_families(client, probe, ("carriers", "cache"))
        found = run_families(client, planned, max_requests=None, max_cost=None)
        elapsed = time.perf_counter() - started
        exchanges = list(emu.exchanges)
    carriers = found.carriers.sent if found.carriers is not None else 0
    cache = len(exchanges) - carriers
    usage_in = sum(_usage_tokens(x.answer, "input_tokens") for x in exchanges)
    usage_out = sum(_usage_tokens(x.answer, "output_tokens") for x in exchanges)
    worst = planned.worst_usd()
    print(f"  --family carriers,cache on the same route: {len(exchanges)} requests ({carriers} carriers, {cache} cache), "
          f"tokens reported {usage_in} input, {usage_out} output, worst case "
          f"{'unknown' if worst is None else f'${worst:.6f}'}, {elapsed * 1000:.1f} ms")


def catalogue_dry_run() -> None:
    plans = compile_paths(data_dir=None, run_config=None, overlays=[], model=None).plans
    env = {**ENV, **DUMMY_ROUTE_ENV}
    total = 0.0
    requests = 0
    family_total = 0.0
    family_requests = 0
    unpriced: list[str] = []
    not_probed: list[str] = []
    started = time.perf_counter()
    for key, plan in sorted(plans.items()):
        if unprobeable_reason(plan) is not None:
            not_probed.append(key)
            continue
        try:
            client = Client(plan, env=env)
            probe = plan_probe(client)
        except UserError as exc:
            not_probed.append(f"{key} ({exc.message})")
            continue
        requests += len(probe.to_send)
        worst = probe.worst_usd()
        if worst is None:
            unpriced.append(key)
        else:
            total += worst
        extra: FamilyPlans = plan_families(client, probe, ("carriers", "cache"))
        family_requests += extra.dry_run_lines("", "")[1]
        family_worst = extra.worst_usd()
        if family_worst is not None and worst is not None:
            family_total += family_worst
    elapsed = time.perf_counter() - started
    print(f"bundled catalogue dry run: {len(plans)} plans, {len(plans) - len(not_probed)} probed, "
          f"{requests} requests planned in {elapsed:.2f} s")
    print(f"  worst-case cost at list prices: ${total:.6f} (no price, so unbounded: {', '.join(unpriced) or 'none'})")
    print(f"  --family carriers,cache on top: {family_requests} more requests, worst case ${family_total:.6f} "
          "on the priced plans")
    print(f"  not probed (mock or native litellm route): {', '.join(not_probed)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs of the one-route probe (the median is printed)")
    options = parser.parse_args()
    one_route(options.repeat)
    catalogue_dry_run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
