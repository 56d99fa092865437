"""Settings discovery: one baseline request per model, adjusted until the provider takes it.

A reasoning model may refuse ``temperature``, want ``max_completion_tokens``, or not know the
effort parameter. The 400 says which; the settings change, the baseline is sent again, and
what works is written to ``calls.jsonl`` as a ``meta`` record that later runs reuse.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from capplan.evals.reasoning_replay.fixture import PROBES, REFUSAL_STATUS
from capplan.evals.reasoning_replay.outcome import CellFailed, baseline_failure
from capplan.evals.reasoning_replay.provider.client import CallSpec
from capplan.evals.reasoning_replay.provider.knobs import Knobs, default_knobs, fix_for
from capplan.evals.reasoning_replay.wire.carriers import synthetic

if TYPE_CHECKING:
    from capplan.evals.reasoning_replay.run.context import RunContext

MAX_FIXES = 4


def discover(ctx: RunContext, model: str) -> Knobs:
    """Settings under which the in-loop baseline gets a 200; raises CellFailed otherwise."""
    knobs = default_knobs(ctx.route)
    probe = ctx.options.probe
    for _ in range(MAX_FIXES + 2):
        payload = synthetic(ctx.route.kind, "in_loop", "none", ctx.session.trace,
                            PROBES[probe], ctx.route.gemini_signature)
        spec = CallSpec(model=model, step="params", position="in_loop", variant="none",
                        probe=probe, payload=payload, knobs=knobs,
                        max_tokens=ctx.options.max_tokens, cell=f"{ctx.route.name}|{model}|params")
        result = ctx.client.call(spec)
        record = result.record
        if result.ok:
            ctx.client.out.calls.append({"t": round(time.time(), 3), "run": ctx.client.run_id,
                                         "route": ctx.route.name, "model": model, "step": "meta",
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

