"""Settings discovery: one baseline request per model, adjusted until the provider takes it.

A reasoning model may refuse ``temperature``, want ``max_completion_tokens``, or not know the
effort parameter. The 400 says which; the settings change, the baseline is sent again, and
what works is written to ``calls.jsonl`` as a ``meta`` record that later runs reuse.
"""

from __future__ import annotations

import time

from capplan.evals.reasoning_replay.fixture import PROBES, REFUSAL_STATUS, Session
from capplan.evals.reasoning_replay.outcome import CellFailed, baseline_failure
from capplan.evals.reasoning_replay.provider.client import CallSpec, Client
from capplan.evals.reasoning_replay.routes import Route
from capplan.evals.reasoning_replay.wire.carriers import synthetic
from capplan.evals.reasoning_replay.wire.knobs import Knobs, default_knobs, fix_for

MAX_FIXES = 4


def discover(client: Client, route: Route, session: Session, model: str, *, probe: str, max_tokens: int) -> Knobs:
    """Settings under which the in-loop baseline gets a 200; raises CellFailed otherwise.

    Takes the run's parts rather than its context, which calls this (the context caches the
    settings each model settles on).
    """
    knobs = default_knobs(route)
    for _ in range(MAX_FIXES + 2):
        payload = synthetic(route.kind, "in_loop", "none", session.trace,
                            PROBES[probe], route.gemini_signature)
        spec = CallSpec(model=model, step="params", position="in_loop", variant="none",
                        probe=probe, payload=payload, knobs=knobs,
                        max_tokens=max_tokens, cell=f"{route.name}|{model}|params")
        result = client.call(spec)
        record = result.record
        if result.ok:
            client.out.calls.append({"t": round(time.time(), 3), "run": client.run_id,
                                     "route": route.name, "model": model, "step": "meta",
                                     "knobs": knobs.as_record(), "probe": probe})
            return knobs
        if record["status"] == REFUSAL_STATUS and probe == "std":
            probe = "alt"  # the refusal is about wording, not settings
            continue
        fixed = fix_for(knobs, str(record["error"])) if record["status"] == 400 else None
        if fixed is None:
            raise CellFailed(baseline_failure(record, "settings probe"))
        knobs = fixed
    raise CellFailed(baseline_failure(record, "settings probe (every adjustment refused)"))

