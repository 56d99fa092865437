"""Whether a trial's user simulator broke: the verdict that keeps its failures apart from the agent's.

A trial whose simulated user broke measures the simulator, not the agent, so it is recorded with
this verdict and left out of the agent's pass rate (τ²-bench's users report up to 30 % of failed
trajectories come from the user simulator). The simulator broke when:

- ``reply_refused``: the reply guard refused a user turn, every generation flagged by a detector:
  it left its scenario or revealed what it was told not to (``fourth_wall``), leaked its reasoning
  (``scratchpad``), or talked like an assistant (``assistant_voice``); the guard's reason codes
  are the verdict's evidence;
- ``looped``: it sent the same message :data:`LOOP_REPEATS` times in a row;
- ``ended_early``: it ended the conversation (its stop or another stop signal) before the agent
  had said anything in text, so there was no answer for it to have read.

A turn the guard regenerated and then delivered is no failure: the simulator recovered, and the
agent saw only the clean reply. Reads plain records (the trajectory's messages and guard events),
so it runs wherever a trial's records are made.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

#: identical user messages in a row that make a loop (two can be a customer repeating a question)
LOOP_REPEATS = 3
#: the message key that marks harness-authored text (parser feedback, markers), not the simulator's words:
#: the recorder's ``ORIGIN`` (usersim imports nothing of capplan; a test holds the two equal)
HARNESS_ORIGIN = "origin"

FailureKind = Literal["reply_refused", "looped", "ended_early"]


@dataclass(frozen=True, slots=True)
class UserSimulatorFailure:
    """The verdict: what broke, and the evidence (reason codes, the turn), never the simulator's words."""

    kind: FailureKind
    detail: str
    codes: tuple[str, ...] = ()

    def to_record(self) -> dict[str, Any]:
        return {"kind": self.kind, "detail": self.detail, "codes": list(self.codes)}


def _user_texts(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    return [str(m.get("content")) for m in messages
            if m.get("role") == "user" and HARNESS_ORIGIN not in m and isinstance(m.get("content"), str)]


def user_simulator_failure(messages: Sequence[Mapping[str, Any]], guard_events: Sequence[Mapping[str, Any]], *,
                           user_ended: bool) -> UserSimulatorFailure | None:
    """The simulator's failure in a finished trial, or None; ``user_ended``: the simulator ended it (a stop signal)."""
    for event in guard_events:
        if event.get("outcome") == "refused":
            codes = tuple(f"{r.get('detector')}:{r.get('reason')}" for r in event.get("rejections") or [])
            return UserSimulatorFailure("reply_refused", f"the reply guard refused the user turn at message "
                                        f"{event.get('message_index')}: every generation was flagged", codes)
    texts = _user_texts(messages)
    run = 1
    for previous, text in zip(texts, texts[1:]):
        run = run + 1 if text.strip() and text.strip() == previous.strip() else 1
        if run >= LOOP_REPEATS:
            return UserSimulatorFailure("looped", f"the user simulator sent the same message {run} times in a row")
    if user_ended:
        answered = any(m.get("role") == "assistant" and HARNESS_ORIGIN not in m
                       and isinstance(m.get("content"), str) and m["content"].strip() for m in messages)
        if not answered:
            return UserSimulatorFailure("ended_early", "the user simulator ended the conversation before the agent "
                                        "had answered in text")
    return None
