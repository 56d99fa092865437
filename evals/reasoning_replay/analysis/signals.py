"""Per-carrier signals: the prompt-token delta against the same-lane, same-wording baseline.

Classes of one measured cell:
  consumed     text: delta >= 0.5·T; opaque: delta > 25 tokens
  partial      text: 25 <= delta < 0.5·T (some tokens reached the prompt, not the trace)
  ignored      200, delta below 25 tokens
  rejected     4xx (status and the provider's exact error are kept)
  error        no usable answer (network, 5xx, non-JSON)
  no-usage     200 without a prompt-token count
  no-baseline  the carrier was measured but its baseline was not (on that lane and wording)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from capplan.evals.reasoning_replay.fixture import carried_traces
from capplan.evals.reasoning_replay.provider.lanes import UNKNOWN

CONSUMED_FRACTION = 0.5
OPAQUE_MIN_DELTA = 25
TEXT_BASELINES = ("none",)


@dataclass
class Signal:
    """One carrier at one position on one lane."""

    step: str
    position: str
    variant: str
    klass: str
    delta: int | None = None
    status: int | None = None
    error: str = ""
    probe: str = ""
    baseline: str = ""
    canary: str = ""  # Y in the answer, r only in the reasoning, n neither (text step)
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (``klass`` becomes ``class``)."""
        data = asdict(self)
        data["class"] = data.pop("klass")
        return data


def baselines_for(step: str, variant: str) -> tuple[str, ...]:
    """Which requests a variant is compared with, in order of preference."""
    if step == "text":
        return TEXT_BASELINES
    if "+" in variant:  # verbatim+all_turns pairs with stripped+all_turns
        return ("stripped+" + variant.split("+", 1)[1],)
    if variant == "verbatim":
        # Gemini 3 refuses an unsigned in-loop tool call, so the dummy signature stands in.
        return ("stripped", "dummy_signature")
    return ("stripped",)


def is_baseline(step: str, variant: str) -> bool:
    """Whether a variant is only ever a baseline (never a carrier)."""
    return variant in TEXT_BASELINES if step == "text" else variant.startswith("stripped")


def measure(records: list[dict[str, Any]], lane: str, step: str, position: str,
            trace_tokens: float) -> list[Signal]:
    """Signals of every carrier at ``position`` of ``step`` on ``lane``.

    At the loop position a carrier request holds one trace per step, so "consumed" means at
    least half of all of them reached the prompt: the whole loop was read, not its last step.
    """
    trace_tokens *= carried_traces(position)
    recs = [r for r in records if r.get("step") == step and r.get("position") == position
            and (r.get("lane") == lane or (r.get("lane") == UNKNOWN and not r.get("ok")))]
    if not recs:
        return []
    # The alt rerun supersedes every request sent with the refused wording.
    probe = "alt" if any(r.get("probe") == "alt" for r in recs) else str(recs[0].get("probe"))
    recs = [r for r in recs if r.get("probe") == probe]
    variants = list(dict.fromkeys(str(r.get("variant")) for r in recs))
    signals = []
    for variant in variants:
        if is_baseline(step, variant):
            continue
        base_name, base = _baseline(recs, lane, step, variant)
        record = _pick([r for r in recs if r.get("variant") == variant], lane)
        if variant == "dummy_signature" and base is None and record.get("ok"):
            continue  # it stood in for the failed stripped baseline; see the verbatim note
        signal = _classify(record, step, position, variant, probe, base_name, base, trace_tokens)
        preferred = baselines_for(step, variant)[0]
        tried = [r for r in recs if r.get("variant") == preferred]
        if base is not None and base_name != preferred and tried:
            failed = _pick(tried, lane)
            signal.note = (f"{preferred} got HTTP {failed.get('status')}: "
                           f"{str(failed.get('error') or '')[:100]}; compared with {base_name}")
        signals.append(signal)
    return signals


def baseline_records(records: list[dict[str, Any]], lane: str) -> list[dict[str, Any]]:
    """Usable baselines on ``lane`` (a 200 with a prompt-token count)."""
    return [r for r in records if r.get("lane") == lane and r.get("ok")
            and isinstance(r.get("prompt_tokens"), int)
            and is_baseline(str(r.get("step")), str(r.get("variant")))
            and r.get("step") in ("text", "opaque")]


def _baseline(recs: list[dict[str, Any]], lane: str, step: str, variant: str
              ) -> tuple[str, int | None]:
    for name in baselines_for(step, variant):
        tokens = [r["prompt_tokens"] for r in recs if r.get("variant") == name
                  and r.get("lane") == lane and r.get("ok") and isinstance(r.get("prompt_tokens"), int)]
        if tokens:
            return name, min(tokens)  # repeat baselines differ only by caching noise
    return baselines_for(step, variant)[0], None


def _pick(recs: list[dict[str, Any]], lane: str) -> dict[str, Any]:
    """The latest usable record of a variant, else its latest answer of any kind."""
    usable = [r for r in recs if r.get("lane") == lane and r.get("ok")
              and isinstance(r.get("prompt_tokens"), int)]
    answered = [r for r in recs if r.get("lane") == lane and r.get("ok")]
    return (usable or answered or recs)[-1]


def _classify(record: dict[str, Any], step: str, position: str, variant: str, probe: str,
              base_name: str, base: int | None, trace_tokens: float) -> Signal:
    status = record.get("status")
    signal = Signal(step, position, variant, "error", status=status, probe=probe, baseline=base_name)
    if not record.get("ok"):
        signal.error = str(record.get("error") or "")
        signal.klass = "rejected" if isinstance(status, int) and 400 <= status < 500 else "error"
        return signal
    if step == "text":
        signal.canary = ("Y" if record.get("canary_in_answer")
                         else "r" if record.get("canary_in_reasoning") else "n")
    tokens = record.get("prompt_tokens")
    if not isinstance(tokens, int):
        signal.klass, signal.error = "no-usage", str(record.get("error") or "")
        return signal
    if base is None:
        signal.klass = "no-baseline"
        return signal
    signal.delta = tokens - base
    signal.klass = _delta_class(signal.delta, step, trace_tokens)
    return signal


def _delta_class(delta: int, step: str, trace_tokens: float) -> str:
    if step == "opaque":
        return "consumed" if delta > OPAQUE_MIN_DELTA else "ignored"
    if delta >= CONSUMED_FRACTION * trace_tokens:
        return "consumed"
    return "partial" if delta >= OPAQUE_MIN_DELTA else "ignored"
