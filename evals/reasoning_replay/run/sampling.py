"""Lane-aware sampling: resample a request until it lands on a direct upstream, and make sure
every lane a carrier landed on also has a baseline measured on that same lane."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from capplan.evals.reasoning_replay.provider.client import CallSpec, Client, Result
from capplan.evals.reasoning_replay.provider.lanes import DIRECT, UNKNOWN


def sample(client: Client, spec: CallSpec, want_direct: bool, attempts: int,
           annotate: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> list[Result]:
    """One call, or up to ``attempts`` calls until one is answered on the direct lane."""
    results: list[Result] = []
    for attempt in range(max(1, attempts) if want_direct else 1):
        result = client.call(spec.again(attempt), annotate)
        results.append(result)
        status = result.record["status"]
        if result.record["lane"] == DIRECT or status == 0:
            break  # reached, or the endpoint is not answering at all
    return results


def measured_lanes(results: list[Result], variants: set[str] | None = None,
                   exclude: set[str] | None = None) -> set[str]:
    """Lanes with a usable measurement (200 and a prompt-token count) among ``results``."""
    lanes = set()
    for r in results:
        variant = r.record["variant"]
        if variants is not None and variant not in variants:
            continue
        if exclude is not None and variant in exclude:
            continue
        if r.ok and r.record["prompt_tokens"] is not None and r.record["lane"] != UNKNOWN:
            lanes.add(r.record["lane"])
    return lanes


def backfill(client: Client, results: list[Result], baseline: CallSpec, attempts: int) -> list[Result]:
    """Resample the baseline until every lane some carrier was measured on has one too."""
    if not client.route.lanes:
        return []
    need = (measured_lanes(results, exclude={baseline.variant})
            - measured_lanes(results, variants={baseline.variant}))
    extra: list[Result] = []
    for attempt in range(attempts if need else 0):
        result = client.call(baseline.again(100 + attempt))  # 100+: marks a backfill sample
        extra.append(result)
        need -= measured_lanes([result])
        if not need:
            break
    return extra
