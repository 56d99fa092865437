"""Step 2 for one model: a live turn 1, then turn 2 with the real carriers verbatim vs stripped.

Turn 1 is retried at a higher reasoning effort (low → medium → high) while it returns no tool
call or no carrier; if it never does, the opaque cells stay empty and say why. With
``--turn1-tool-choice required|tool`` turn 1 is forced to call the tool (a model that answers in
text at every effort never reaches step 2 otherwise); a route that refuses the field with a 4xx
is asked again without it, and each turn-1 record says which ``tool_choice`` it was sent with.
"""

from __future__ import annotations

from typing import Any

from capplan.evals.reasoning_replay.fixture import POSITIONS, PROBES, REFUSAL_STATUS
from capplan.evals.reasoning_replay.opaque.capture import Capture, OpaqueFlavour
from capplan.evals.reasoning_replay.opaque.chat import ChatFlavour
from capplan.evals.reasoning_replay.opaque.gemini import GeminiFlavour
from capplan.evals.reasoning_replay.opaque.responses import ResponsesFlavour
from capplan.evals.reasoning_replay.outcome import CellOutcome, baseline_failure
from capplan.evals.reasoning_replay.provider.client import CallSpec, Result
from capplan.evals.reasoning_replay.run.context import RunContext
from capplan.evals.reasoning_replay.run.sampling import backfill, sample
from capplan.evals.reasoning_replay.wire.knobs import EFFORTS

FLAVOURS: dict[str, OpaqueFlavour] = {
    "chat": ChatFlavour(), "responses": ResponsesFlavour(), "gemini": GeminiFlavour(),
}


def run_opaque_cell(ctx: RunContext, model: str, cell: str) -> CellOutcome:
    """Turn 1, then for each position the turn-2 variants against their stripped baseline."""
    flavour = FLAVOURS[ctx.route.kind]
    capture, failure = _turn1(ctx, model, flavour, cell)
    if capture is None:
        return failure
    # a live turn 1 gives one step to replay: the multi-step loop position is step 1's alone
    for position in (p for p in ctx.options.positions if p in POSITIONS):
        _turn2(ctx, model, flavour, capture, position, cell)
    return CellOutcome("done", final=True, reason="carriers: " + ", ".join(capture.summary["carriers"]))


def _turn2(ctx: RunContext, model: str, flavour: OpaqueFlavour, capture: Capture,
           position: str, cell: str) -> None:
    knobs = ctx.knobs_for(model)
    want_direct, attempts = ctx.want_direct(model), ctx.options.lane_attempts

    def specs(probe: str) -> list[CallSpec]:
        return [CallSpec(model=model, step="opaque", position=position, variant=variant,
                         probe=probe, payload=payload, knobs=knobs, extra=extra,
                         max_tokens=ctx.options.max_tokens, cell=cell)
                for variant, payload, extra in flavour.turn2(capture, position, PROBES[probe], ctx.route)]

    probe = ctx.options.probe
    batch = specs(probe)
    results = sample(ctx.client, batch[0], want_direct, attempts)
    if results[-1].record["status"] == REFUSAL_STATUS and probe == "std":
        batch = specs("alt")  # the same wording fallback as step 1
        results = sample(ctx.client, batch[0], want_direct, attempts)
    for spec in batch[1:]:
        results += sample(ctx.client, spec, want_direct, attempts)
    results += backfill(ctx.client, results, batch[0], attempts)


def _turn1(ctx: RunContext, model: str, flavour: OpaqueFlavour, cell: str
           ) -> tuple[Capture | None, CellOutcome]:
    knobs = ctx.knobs_for(model)
    efforts: tuple[str | None, ...] = EFFORTS if knobs.escalates else (knobs.effort,)
    captured: dict[str, Capture] = {}

    def annotate(body: dict[str, Any]) -> dict[str, Any]:
        capture = flavour.capture(body, ctx.route)
        captured["last"] = capture
        return {"turn1": capture.summary, "replay": capture.turns.get("verbatim")}

    choice = ctx.options.turn1_tool_choice
    for effort in efforts:
        captured.clear()
        forced = choice != "auto"

        # B023: turn1 is called only in this iteration, so `effort` is this iteration's
        def turn1(forced: bool) -> Result:
            spec = CallSpec(model=model, step="opaque_turn1", position="-", variant=f"effort:{effort}",  # noqa: B023
                            probe="-", payload=flavour.turn1_payload(), knobs=knobs.with_effort(effort),  # noqa: B023
                            max_tokens=ctx.options.turn1_max_tokens, cell=cell,
                            extra=flavour.force_tool(choice) if forced else None,
                            tool_choice=choice if forced else "auto")
            return sample(ctx.client, spec, ctx.want_direct(model), ctx.options.lane_attempts, annotate)[-1]

        last = turn1(forced)
        if forced and not last.ok and 400 <= int(last.record.get("status") or 0) < 500:
            last = turn1(False)  # the route refuses a forced call: measure what it does unforced
        if not last.ok:
            return None, baseline_failure(last.record, "turn 1")
        capture = captured.get("last")
        if capture is not None and capture.usable:
            return capture, CellOutcome("done", final=True)
    tried = ", ".join(str(e) for e in efforts)
    hint = "" if choice != "auto" else "; --turn1-tool-choice required forces the call"
    return None, CellOutcome("no-carrier", final=True,
                             reason=f"turn 1 returned no tool call with a reasoning carrier "
                                    f"(effort tried: {tried}, tool_choice: {choice}); opaque cells left "
                                    f"empty{hint}")
