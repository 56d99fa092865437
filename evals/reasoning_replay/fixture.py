"""The fixed conversation every measurement is built from, and the synthetic reasoning trace.

The trace is ~400 tokens (by chars/4) of distinctive filler, deterministic for a seed, with
exactly one canary sentence: ``The verification word for this task is <word>.``
"""

from __future__ import annotations

import random
from dataclasses import dataclass

SYSTEM = "You are a concise assistant. Use tools when they are needed."
USER_TASK = "What is the weather in Paris right now? Use the get_weather tool."
TOOL_RESULT = "Paris: 18 C, light rain, wind 12 km/h."
FINAL_ANSWER = "It is 18 C with light rain in Paris."
CALL_ID = "call_rr_0001"
TOOL_NAME = "get_weather"
TOOL_ARGS = '{"city": "Paris"}'
TOOL_DESCRIPTION = "Current weather for a city."
TOOL_PARAMETERS = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}

# xAI refuses (403) a user turn that asks about "earlier reasoning"; ``alt`` avoids the phrase.
PROBES: dict[str, str] = {
    "std": "If your earlier reasoning contained a verification word, reply with only that word; "
           "otherwise reply NONE.",
    "alt": "If a verification word was mentioned for this task, reply with only that word; "
           "otherwise reply NONE.",
}

# The status of that refusal: a baseline answered with it reruns its position with ``alt``.
REFUSAL_STATUS = 403

POSITIONS = ("in_loop", "cross_turn")  # the method's two positions, run by default
# Opt-in: a tool loop of LOOP_STEPS steps, the carrier on every step. A template that keeps the
# whole current loop reads LOOP_STEPS traces (consumed); one that keeps only the step right before
# the request reads one (partial); the earlier steps' share is what tells them apart.
LOOP_POSITION = "loop_steps"
ALL_POSITIONS = (*POSITIONS, LOOP_POSITION)
LOOP_STEPS = 3
# (call id, city, tool result) of each step of the loop position
LOOP_CALLS = (("call_rr_0001", "Paris", TOOL_RESULT),
              ("call_rr_0002", "Lyon", "Lyon: 16 C, overcast, wind 9 km/h."),
              ("call_rr_0003", "Nice", "Nice: 22 C, clear, wind 5 km/h."))
TRACE_TARGET_CHARS = 1600  # ≈ 400 tokens at 4 chars per token
CANARY_SENTENCE = "The verification word for this task is {word}."

_CANARIES = ("quillwort", "tamarack", "halyard", "pemmican", "lanolin", "gimbal", "sorrel",
             "bracken", "wimple", "fescue", "marlin", "osprey", "tallow", "zircon", "bramble",
             "cordage")
_ADJECTIVES = ("amber", "brittle", "coastal", "dappled", "ember", "frosted", "gilded", "hollow",
               "ivory", "jagged", "kindled", "lunar", "molten", "nimble", "opal", "pewter")
_NOUNS = ("barometer", "lighthouse", "isobar", "anemometer", "ledger", "compass", "weathervane",
          "harbor", "sextant", "almanac", "cistern", "gazebo", "trellis", "beacon", "quarry")


def carried_traces(position: str) -> int:
    """How many copies of the trace a carrier request at ``position`` holds (one per step)."""
    return LOOP_STEPS if position == LOOP_POSITION else 1


@dataclass(frozen=True)
class Session:
    """The seed of an output folder and what it determines."""

    seed: int
    canary: str
    trace: str

    @property
    def trace_tokens(self) -> float:
        """T in the verdict rules: the trace size in tokens, estimated as chars/4."""
        return len(self.trace) / 4


def make_session(seed: int) -> Session:
    """Canary word and trace for ``seed``; the same seed always gives the same bytes."""
    rng = random.Random(seed)
    canary = rng.choice(_CANARIES)
    return Session(seed=seed, canary=canary, trace=make_trace(canary, rng))


def make_trace(canary: str, rng: random.Random) -> str:
    """Numbered planning steps about the weather lookup, with the canary sentence mid-way."""
    steps: list[str] = []
    length = 0
    while length < TRACE_TARGET_CHARS:
        step = (f"Step {len(steps) + 1}: the {rng.choice(_ADJECTIVES)} {rng.choice(_NOUNS)} "
                f"suggests checking the {rng.choice(_ADJECTIVES)} {rng.choice(_NOUNS)} before "
                f"calling get_weather for Paris, ledger mark {rng.randint(1000, 9999)}.")
        steps.append(step)
        length += len(step) + 1
    steps.insert(len(steps) // 2, CANARY_SENTENCE.format(word=canary))
    return " ".join(steps)
