"""Step 1 for one (model, position): the ``none`` baseline, then every synthetic carrier.

When the baseline is refused with a 403 under the standard probe wording, the whole position
is rerun with the neutral ``alt`` wording; deltas are computed only between requests that
used the same wording, so the refused requests never pair with the rerun.
"""

from __future__ import annotations

from capplan.evals.reasoning_replay.fixture import PROBES, REFUSAL_STATUS
from capplan.evals.reasoning_replay.outcome import CellOutcome, baseline_failure
from capplan.evals.reasoning_replay.provider.client import CallSpec, Result
from capplan.evals.reasoning_replay.run.context import RunContext
from capplan.evals.reasoning_replay.run.sampling import backfill, measured_lanes, sample
from capplan.evals.reasoning_replay.wire.carriers import synthetic

def run_text_cell(ctx: RunContext, model: str, position: str, cell: str) -> CellOutcome:
    """Measure every text carrier at ``position`` against its same-wording baseline."""
    knobs = ctx.knobs_for(model)
    want_direct = ctx.want_direct(model)
    attempts = ctx.options.lane_attempts

    def spec(variant: str, probe: str) -> CallSpec:
        payload = synthetic(ctx.route.kind, position, variant, ctx.session.trace, PROBES[probe],
                            ctx.route.gemini_signature)
        return CallSpec(model=model, step="text", position=position, variant=variant,
                        probe=probe, payload=payload, knobs=knobs,
                        max_tokens=ctx.options.max_tokens, cell=cell)

    probe = ctx.options.probe
    results = sample(ctx.client, spec("none", probe), want_direct, attempts)
    if results[-1].record["status"] == REFUSAL_STATUS and probe == "std":
        probe = "alt"
        results = sample(ctx.client, spec("none", probe), want_direct, attempts)
    if not measured_lanes(results):
        return baseline_failure(results[-1].record, f"{position} baseline")
    for variant in ctx.options.variants:
        if variant != "none":
            results += sample(ctx.client, spec(variant, probe), want_direct, attempts)
    results += backfill(ctx.client, results, spec("none", probe), attempts)
    return CellOutcome("done", final=True, reason=_summary(results, probe))


def _summary(results: list[Result], probe: str) -> str:
    rejected = sorted({r.record["variant"] for r in results if 400 <= r.record["status"] < 500})
    note = f"probe={probe}"
    return note + (f"; 4xx on {', '.join(rejected)}" if rejected else "")
