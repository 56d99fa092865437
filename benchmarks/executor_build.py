"""Executor build-time benchmark: how small request building is next to one provider round trip.

Measured in one run, medians over repeated calls:

* per-request build time (plan loaded, same tools as the previous call) as a ratio to one full
  ``litellm.completion`` round trip against a loopback server (target <= 0.05);
* sanitisation of a repeated tool list: first call (sanitise + validators) over a memo hit
  (target >= 20x);
* plan load + client construction time.

Run from the project root:  python benchmarks/executor_build.py [--plan golden/plans/gpt-5.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from capplan.executor.client import Client  # noqa: E402
from capplan.executor.messages import ChatRequest, load_request  # noqa: E402
from capplan.executor.plan import Plan  # noqa: E402
from capplan.executor.policies.response_policy import param_types_from_tools  # noqa: E402
from capplan.executor.tool_memo import ToolMemo, tools_json  # noqa: E402
from tests.fake_provider import FakeProvider, unscripted  # noqa: E402


def median_s(fn: Callable[[], Any], repeat: int) -> float:
    """Median wall time of ``fn`` over ``repeat`` calls."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def tool_list(copies: int) -> list[dict[str, Any]]:
    """Every finite-schema tool of the golden conversations, ``copies`` times under distinct names."""
    tools: dict[str, dict[str, Any]] = {}
    for path in sorted((ROOT / "golden" / "conversations").glob("*.json")):
        for tool in load_request(path).tool_dicts():
            if tool["function"]["name"] != "submit_tree":  # recursive: strict refuses it by design
                tools[tool["function"]["name"]] = tool
    out = []
    for i in range(copies):
        for tool in tools.values():
            copy = json.loads(json.dumps(tool))
            copy["function"]["name"] = f"{copy['function']['name']}_{i}"
            out.append(copy)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--plan", type=Path, default=ROOT / "golden" / "plans" / "gpt-5.json")
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--tool-copies", type=int, default=4)
    args = parser.parse_args()

    load = median_s(lambda: Client(Plan.load(args.plan), env={}), 50)

    tools = tool_list(args.tool_copies)
    client = Client(Plan.load(args.plan), env={})
    sanitize = client.policies.schema_sanitizer.sanitize
    first = median_s(
        lambda: ToolMemo(sanitize, param_types_from_tools).prepare(tools_json(tools)), 30
    )
    sanitize_only = median_s(lambda: sanitize(tools), 30)
    memo = ToolMemo(sanitize, param_types_from_tools)
    spec = ChatRequest.model_validate(
        {"tools": tools, "messages": [{"role": "user", "content": "x"}]}
    )
    memo.prepare(spec.tools_json())
    hit = median_s(lambda: memo.prepare(spec.tools_json()), args.repeat)

    request = ChatRequest.model_validate(
        {
            "system": "You are a billing assistant.",
            "tools": tools,
            "messages": [
                {"role": "user", "content": "Invoice ACME for two hours of consulting."},
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "function": {"name": tools[0]["function"]["name"], "arguments": "{}"},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "created"},
            ],
        }
    )
    client.build(request)  # the previous call: same tools
    build = median_s(lambda: client.build(request), args.repeat)

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("OPENAI_API_KEY", "sk-benchmark")
    import litellm

    body = {
        "id": "chatcmpl-b",
        "object": "chat.completion",
        "created": 1767225600,
        "model": "m",
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
    }
    with FakeProvider(unscripted) as server:
        wire = Client(Plan.load(args.plan), env={}, api_base=server.base)
        kwargs = wire.build_request(request)
        rounds = 30

        def round_trip() -> None:
            server.queue(body)
            litellm.completion(**kwargs)

        round_trip()  # connection setup and first-call caches
        trip = median_s(round_trip, rounds)

    print(f"plan: {args.plan.name} ({len(tools)} tools, {len(json.dumps(tools))} bytes of schema)")
    print(f"plan load + client construction: {load * 1e3:.2f} ms")
    print(
        f"tool preparation first call (sanitise + schema check + validators + param types): {first * 1e3:.3f} ms; "
        f"memo hit (serialise + digest + lookup): {hit * 1e3:.3f} ms; speed-up {first / hit:.1f}x (target >= 20x)"
    )
    print(f"sanitiser alone: {sanitize_only * 1e3:.3f} ms, {sanitize_only / hit:.1f}x a memo hit")
    print(f"build per request (same tools): {build * 1e3:.3f} ms")
    print(f"litellm.completion loopback round trip: {trip * 1e3:.2f} ms")
    print(f"build / round trip: {build / trip:.4f} (target <= 0.05)")


if __name__ == "__main__":
    main()
