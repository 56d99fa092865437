"""Gateway and probe benchmark, measured in one run.

1. Per-request gateway work once the catalog is cached (route resolution and header composition,
   with its fresh UUID4), as a ratio to building the request itself (target <= 0.05). The client
   resolves its route once at construction; the figure is also given as if it resolved it again
   on every request.
2. 10 000 calls through probe mode against a fake gateway that answers 429 to 30 % of requests,
   on an injected clock (no real waiting), in two parallel legs whose telemetry is merged window
   by window: no call lost, none counted twice, census totals equal to the calls made.

Run from the project root:  python benchmarks/gateway_routing.py [--calls 10000] [--plan golden/plans/...]
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import openai  # noqa: E402

from capplan.executor.client import Client  # noqa: E402
from capplan.executor.gateway.catalog import clear_catalog_cache  # noqa: E402
from capplan.executor.gateway.config import EnvSource, resolve_gateway_config  # noqa: E402
from capplan.executor.gateway.transport import decide_route  # noqa: E402
from capplan.executor.messages import ChatRequest, load_request  # noqa: E402
from capplan.executor.plan import Plan  # noqa: E402
from capplan.executor.probe import RateLimitProbeConfig  # noqa: E402
from capplan.executor.probe_stats import ProbeStats  # noqa: E402
from tests.fake_provider import FakeProvider  # noqa: E402


def median_s(fn: Callable[[], Any], repeat: int) -> float:
    """Median wall time of ``fn`` over ``repeat`` calls."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def variants(conversation: Path, count: int) -> list[ChatRequest]:
    """``count`` distinct requests: the conversation with a different last user turn each time."""
    data = load_request(conversation).model_dump(mode="json")
    out = []
    for i in range(count):
        copy = json.loads(json.dumps(data))
        copy["messages"].append({"role": "user", "content": f"turn {i}: and now?"})
        out.append(ChatRequest.model_validate(copy))
    return out


def per_call_s(fn: Callable[[Any], Any], items: list[Any]) -> float:
    start = time.perf_counter()
    for item in items:
        fn(item)
    return (time.perf_counter() - start) / len(items)


def routing_overhead(plan_path: Path, conversation: Path, repeat: int) -> None:
    plan = Plan.load(plan_path)
    catalog_server = FakeProvider(name="catalog").start()
    catalog_server.catalog = [plan.model.model_id, "openrouter/other/model", "other/model"]
    try:
        clear_catalog_cache()
        env = {
            "LLM_PROXY_BASE_URL": catalog_server.root, "LLM_PROXY_API_KEY": "sk-bench-gateway",
            "LLM_PROXY_HEADERS": '{"X-Team-Id": "research", "X-Order-Id": "${secret:ORDER}"}', "ORDER": "9000123",
            "LLM_PROXY_REQUEST_ID_HEADER": "X-Request-Id", "OPENROUTER_API_KEY": "sk-bench",
        }
        routed = Client(plan, env=env)  # reads the catalog once; every later client hits the cache
        assert routed.route is not None and routed.route.kind == "exact", routed.route
        config = resolve_gateway_config(EnvSource(env))
        gateway = routed.gateway
        assert config is not None and gateway is not None
        fresh_rounds, same_rounds, apply_rounds, resolve_rounds = [], [], [], []
        for _ in range(repeat):  # interleaved rounds, so load on the machine hits every figure alike
            direct = Client(plan, env={"OPENROUTER_API_KEY": "sk-bench"})  # cold conversation cache
            requests = variants(conversation, 20)
            fresh_rounds.append(per_call_s(direct.build, requests))
            same_rounds.append(per_call_s(direct.build, [requests[0]] * 20))
            kwargs = [dict(direct.build(r).kwargs) for r in requests]
            apply_rounds.append(per_call_s(gateway.apply, kwargs))
            resolve_rounds.append(per_call_s(lambda _: decide_route(plan, config), requests))
        fresh, same = statistics.median(fresh_rounds), statistics.median(same_rounds)
        apply, resolve = statistics.median(apply_rounds), statistics.median(resolve_rounds)
    finally:
        catalog_server.close()
        clear_catalog_cache()
    print(f"plan {plan_path.name}, conversation {conversation.name} + one new user turn per request")
    print(f"  request build, new turn each request        {fresh * 1e6:8.1f} us")
    print(f"  request build, same request again (memo)    {same * 1e6:8.1f} us")
    print(f"  gateway per request (headers, request id)   {apply * 1e6:8.1f} us   "
          f"ratio {apply / fresh:.4f} of a new-turn build (target <= 0.05); {apply / same:.4f} of a memo hit")
    print(f"  route resolution from the cached catalog    {resolve * 1e6:8.1f} us   "
          f"(once per client; {(apply + resolve) / fresh:.4f} of a build if it were redone per request)")


class FakeGateway:
    """Answers 429 to ``rate`` of requests (seeded), else a completion; counts both, thread-safely."""

    def __init__(self, rate: float, seed: int) -> None:
        self.rate = rate
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.served = 0
        self.rejected = 0
        request = httpx.Request("POST", "http://gateway.invalid/chat/completions")
        self.response_429 = httpx.Response(429, request=request, json={"error": {"message": "slow down"}})

    def __call__(self, **kwargs: Any) -> Any:
        with self.lock:
            reject = self.rng.random() < self.rate
            if reject:
                self.rejected += 1
            else:
                self.served += 1
        if reject:
            raise openai.RateLimitError("slow down", response=self.response_429, body=None)
        return {"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}],
                "usage": {"prompt_tokens": 11, "completion_tokens": 3}}


class LegClock:
    """One leg's clock: starts at a shared epoch, moves only when the leg sleeps."""

    def __init__(self, start: float) -> None:
        self.now = start
        self.slept = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.slept += seconds


def census(calls: int, legs: int, plan_path: Path) -> bool:
    plan = Plan.load(plan_path)
    probe = RateLimitProbeConfig(enabled=True, retry_interval_s=15.0, jitter_fraction=0.2, per_call_budget_s=3600.0,
                                 bucket_width_s=30, max_buckets=100_000)
    gateway = FakeGateway(0.30, seed=14)
    stats = [ProbeStats(bucket_width_s=probe.bucket_width_s, max_buckets=probe.max_buckets) for _ in range(legs)]
    returned = [0] * legs
    started = time.perf_counter()
    epoch = 1_767_225_600.0  # every leg starts at the same absolute time, like parallel processes

    def leg(i: int) -> None:
        clock = LegClock(epoch)
        client = Client(plan, completion=gateway, env={"OPENROUTER_API_KEY": "sk-bench"}, rate_limit_probe=probe,
                        sleep=clock.sleep, clock=clock, wall_clock=clock)
        for _ in range(calls // legs):
            client.generate({"messages": [{"role": "user", "content": "hi"}]}, probe_stats=stats[i])
            returned[i] += 1
            clock.now += 1.0  # the call itself takes a second of simulated time

    threads = [threading.Thread(target=leg, args=(i,)) for i in range(legs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    merged = ProbeStats(bucket_width_s=probe.bucket_width_s, max_buckets=probe.max_buckets)
    for s in stats:
        merged.merge(s)
    totals = merged.totals()
    window_successes = sum(c.successes for c in merged.buckets.values())
    window_retries = sum(c.rate_limit_retries for c in merged.buckets.values())
    shared_windows = len({start for (_, _, start) in stats[0].buckets} & {start for (_, _, start) in stats[1].buckets}) if legs > 1 else 0
    made = calls // legs * legs
    checks = {
        "calls returned == calls made": sum(returned) == made,
        "census successes == calls made": totals.successes == made,
        "gateway served == calls made (none lost, none sent twice)": gateway.served == made,
        "census 429 retries == 429s answered": totals.rate_limit_retries == gateway.rejected,
        "window sums == series totals": (window_successes, window_retries) == (totals.successes, totals.rate_limit_retries),
        "no window row dropped": merged.dropped_buckets == 0,
    }
    print(f"\n{made} calls in {legs} parallel legs, 30 % answered 429, probe mode, injected clock")
    print(f"  requests sent {gateway.served + gateway.rejected}, served {gateway.served}, 429 {gateway.rejected} "
          f"({gateway.rejected / (gateway.served + gateway.rejected):.1%})")
    print(f"  census: successes {totals.successes}, 429 retries {totals.rate_limit_retries}, "
          f"wait {totals.rate_limit_wait_s:.0f} s simulated (mean {totals.rate_limit_wait_s / max(totals.rate_limit_retries, 1):.2f} s), "
          f"tokens {totals.prompt_tokens}+{totals.completion_tokens}")
    print(f"  {len(merged.buckets)} window rows of {probe.bucket_width_s} s; {shared_windows} windows written by both legs, summed")
    print(f"  wall time {elapsed:.1f} s ({elapsed / made * 1e6:.0f} us per call, no real waiting)")
    for name, ok in checks.items():
        print(f"  {'ok  ' if ok else 'FAIL'} {name}")
    return all(checks.values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plan", type=Path, default=ROOT / "golden" / "plans" / "claude-opus-4.7-openrouter.json")
    parser.add_argument("--conversation", type=Path, default=ROOT / "golden" / "conversations" / "dict_map_tools.json")
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--legs", type=int, default=2)
    args = parser.parse_args()
    logging.getLogger("capplan.executor.retrying").setLevel(logging.ERROR)  # thousands of retry lines otherwise
    routing_overhead(args.plan, args.conversation, args.repeat)
    return 0 if census(args.calls, args.legs, args.plan) else 1


if __name__ == "__main__":
    sys.exit(main())
