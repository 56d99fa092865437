"""The verdict of one (route, model, lane) row, exactly as the method defines them.

  consumes-all-turns       a cross-turn carrier is consumed (text, or opaque verbatim)
  in-loop-only             an in-loop carrier (one step, or the whole loop of the opt-in
                           loop_steps position) is consumed, no cross-turn carrier is
  accepted-ignored         carriers got 200 but no delta reaches the consumed threshold
  rejected                 no carrier got a comparable 200, and carriers got 4xx
  baseline-failed          no comparable measurement exists (the baseline never gave one)
  direct-lane-not-reached  a --want-direct id only ever reached the OpenRouter lane

``not-measured`` is not a verdict: the row's cells were planned but no request was sent
(budget reached or run interrupted before them; rerunning resumes them), or every call was
answered but step 2's turn 1 returned no tool call with a carrier, so there was nothing to replay
(the row's note says why; ``--turn1-tool-choice required`` forces the call).
"""

from __future__ import annotations

from capplan.evals.reasoning_replay.analysis.signals import Signal
from capplan.evals.reasoning_replay.fixture import LOOP_POSITION, LOOP_STEPS, carried_traces

VERDICTS = ("consumes-all-turns", "in-loop-only", "accepted-ignored", "rejected",
            "baseline-failed", "direct-lane-not-reached")
NOT_MEASURED = "not-measured"


def is_carrier(signal: Signal) -> bool:
    """Signals that decide a verdict: every text carrier, and opaque verbatim replays."""
    return signal.step == "text" or signal.variant.startswith("verbatim")


def verdict(signals: list[Signal]) -> str:
    """Apply the rules in order; the first that holds is the verdict."""
    carriers = [s for s in signals if is_carrier(s)]
    consumed = {s.position for s in carriers if s.klass == "consumed"}
    if "cross_turn" in consumed:
        return "consumes-all-turns"
    if consumed & {"in_loop", LOOP_POSITION}:
        return "in-loop-only"
    if any(s.delta is not None for s in carriers):
        return "accepted-ignored"
    if any(s.klass == "rejected" for s in carriers):
        return "rejected"
    return "baseline-failed"


def notes(signals: list[Signal], trace_tokens: float) -> list[str]:
    """Facts a reader should see next to the verdict (partial deltas, mixed answers)."""
    out = []
    for s in signals:
        if s.note:
            out.append(f"{s.step}:{s.position}:{s.variant} {s.note}")
        if s.klass == "partial":
            whole = 0.5 * trace_tokens * carried_traces(s.position)
            out.append(f"{s.step}:{s.position}:{s.variant} partial delta {s.delta:+d} "
                       f"(below 0.5·T = {whole:.0f})" + (
                           f": the template reads part of the {LOOP_STEPS}-step loop, likely its last step only"
                           if s.position == LOOP_POSITION else ""))
        elif s.klass == "consumed" and s.position == LOOP_POSITION:
            out.append(f"{s.step}:{s.position}:{s.variant} consumed {s.delta:+d}: the template reads every step "
                       f"of the {LOOP_STEPS}-step tool loop")
        elif s.klass in ("no-usage", "no-baseline", "error"):
            detail = f": {s.error[:120]}" if s.error else ""
            out.append(f"{s.step}:{s.position}:{s.variant} {s.klass}{detail}")
    return out
