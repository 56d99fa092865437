"""Step 1: the synthetic carriers, one conversation per (wire kind, position, variant).

A variant differs from the ``none`` baseline only by the carrier itself: the carrier keys are
appended after every other key of the assistant turn (or inserted as one extra item/part), so
cutting the carrier out of the serialised body gives the baseline's bytes exactly.
"""

from __future__ import annotations

from typing import Any

from capplan.evals.reasoning_replay.errors import UsageError
from capplan.evals.reasoning_replay.fixture import (CALL_ID, FINAL_ANSWER, LOOP_CALLS, LOOP_POSITION, SYSTEM,
                                                    TOOL_ARGS, TOOL_NAME, TOOL_RESULT, USER_TASK)

CHAT_VARIANTS = ("none", "reasoning_content", "reasoning", "reasoning_details", "all")
RESPONSES_VARIANTS = ("none", "summary_item", "content_item")
GEMINI_VARIANTS = ("none", "thought_part")
VARIANTS: dict[str, tuple[str, ...]] = {
    "chat": CHAT_VARIANTS, "responses": RESPONSES_VARIANTS, "gemini": GEMINI_VARIANTS,
}

# Documented validator bypass for tool-call history a Gemini 3 model did not sign itself.
GEMINI_DUMMY_SIGNATURE = "skip_thought_signature_validator"

Payload = list[dict[str, Any]]


def check_variants(kind: str, wanted: list[str]) -> tuple[str, ...]:
    """The variants to run for ``kind`` (all by default); unknown names are usage errors."""
    valid = VARIANTS[kind]
    if not wanted:
        return valid
    bad = [v for v in wanted if v not in valid]
    if bad:
        raise UsageError(f"--variants {','.join(bad)} not valid for a {kind} route; "
                         f"valid: {', '.join(valid)}")
    return tuple(["none", *[v for v in wanted if v != "none"]])


def synthetic(kind: str, position: str, variant: str, trace: str, probe: str,
              gemini_signature: bool = False) -> Payload:
    """The whole conversation for one step-1 request."""
    if kind == "chat":
        return chat_messages(position, variant, trace, probe, gemini_signature)
    if kind == "responses":
        return responses_input(position, variant, trace, probe)
    return gemini_contents(position, variant, trace, probe)


def chat_messages(position: str, variant: str, trace: str, probe: str,
                  gemini_signature: bool) -> Payload:
    head: Payload = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER_TASK}]
    if position == LOOP_POSITION:
        # every step of the loop carries the trace; the probe rides in the last tool result
        for index, (call_id, city, result) in enumerate(LOOP_CALLS):
            last = index == len(LOOP_CALLS) - 1
            head += [_chat_step(call_id, _city_args(city), variant, trace, gemini_signature),
                     {"role": "tool", "tool_call_id": call_id, "content": f"{result}\n\n{probe}" if last else result}]
        return head
    return [*head, _chat_step(CALL_ID, TOOL_ARGS, variant, trace, gemini_signature),
            *chat_tail(position, probe, CALL_ID)]


def _chat_step(call_id: str, arguments: str, variant: str, trace: str, gemini_signature: bool) -> dict[str, Any]:
    """One assistant tool-call turn, its carrier keys after every other key."""
    call: dict[str, Any] = {"id": call_id, "type": "function",
                            "function": {"name": TOOL_NAME, "arguments": arguments}}
    if gemini_signature:
        call["extra_content"] = {"google": {"thought_signature": GEMINI_DUMMY_SIGNATURE}}
    assistant: dict[str, Any] = {"role": "assistant", "content": "", "tool_calls": [call]}
    if variant in ("reasoning_content", "all"):
        assistant["reasoning_content"] = trace
    if variant in ("reasoning", "all"):
        assistant["reasoning"] = trace
    if variant in ("reasoning_details", "all"):
        assistant["reasoning_details"] = [
            {"type": "reasoning.text", "text": trace, "format": "unknown", "index": 0}]
    return assistant


def _city_args(city: str) -> str:
    return TOOL_ARGS.replace("Paris", city)


def chat_tail(position: str, probe: str, call_id: str) -> Payload:
    """What follows the tool-call turn: the probe in the tool result, or after a final answer."""
    if position == "in_loop":
        return [{"role": "tool", "tool_call_id": call_id, "content": f"{TOOL_RESULT}\n\n{probe}"}]
    return [{"role": "tool", "tool_call_id": call_id, "content": TOOL_RESULT},
            {"role": "assistant", "content": FINAL_ANSWER},
            {"role": "user", "content": probe}]


def responses_input(position: str, variant: str, trace: str, probe: str) -> Payload:
    items: Payload = [{"role": "user", "content": USER_TASK}]
    if position == LOOP_POSITION:
        for index, (call_id, city, result) in enumerate(LOOP_CALLS):
            last = index == len(LOOP_CALLS) - 1
            items += _responses_step(call_id, _city_args(city), variant, trace)
            items.append({"type": "function_call_output", "call_id": call_id,
                          "output": f"{result}\n\n{probe}" if last else result})
        return items
    return items + _responses_step(CALL_ID, TOOL_ARGS, variant, trace) + responses_tail(position, probe, CALL_ID)


def _responses_step(call_id: str, arguments: str, variant: str, trace: str) -> Payload:
    """One function call, preceded by its reasoning item in a carrier variant."""
    items: Payload = []
    if variant == "summary_item":
        items.append({"type": "reasoning", "summary": [{"type": "summary_text", "text": trace}]})
    elif variant == "content_item":
        items.append({"type": "reasoning", "summary": [],
                      "content": [{"type": "reasoning_text", "text": trace}]})
    items.append({"type": "function_call", "call_id": call_id, "name": TOOL_NAME, "arguments": arguments})
    return items


def responses_tail(position: str, probe: str, call_id: str) -> Payload:
    """Responses-API version of :func:`chat_tail`."""
    if position == "in_loop":
        return [{"type": "function_call_output", "call_id": call_id,
                 "output": f"{TOOL_RESULT}\n\n{probe}"}]
    return [{"type": "function_call_output", "call_id": call_id, "output": TOOL_RESULT},
            {"role": "assistant", "content": FINAL_ANSWER},
            {"role": "user", "content": probe}]


def gemini_contents(position: str, variant: str, trace: str, probe: str) -> Payload:
    head: Payload = [{"role": "user", "parts": [{"text": USER_TASK}]}]
    if position == LOOP_POSITION:
        for index, (_call_id, city, result) in enumerate(LOOP_CALLS):
            last = index == len(LOOP_CALLS) - 1
            head += [_gemini_step(city, variant, trace), {"role": "user", "parts": [{"functionResponse": {
                "name": TOOL_NAME, "response": {"result": f"{result}\n\n{probe}" if last else result}}}]}]
        return head
    return [*head, _gemini_step("Paris", variant, trace), *gemini_tail(position, probe)]


def _gemini_step(city: str, variant: str, trace: str) -> dict[str, Any]:
    """One model turn calling the tool, its thought part first in a carrier variant."""
    parts: Payload = [{"text": trace, "thought": True}] if variant == "thought_part" else []
    parts.append({"functionCall": {"name": TOOL_NAME, "args": {"city": city}},
                  "thoughtSignature": GEMINI_DUMMY_SIGNATURE})
    return {"role": "model", "parts": parts}


def gemini_tail(position: str, probe: str) -> Payload:
    """Gemini-native version of :func:`chat_tail` (tool results travel in a user turn)."""
    if position == "in_loop":
        return [{"role": "user", "parts": [{"functionResponse": {
            "name": TOOL_NAME, "response": {"result": f"{TOOL_RESULT}\n\n{probe}"}}}]}]
    return [{"role": "user", "parts": [{"functionResponse": {
                "name": TOOL_NAME, "response": {"result": TOOL_RESULT}}}]},
            {"role": "model", "parts": [{"text": FINAL_ANSWER}]},
            {"role": "user", "parts": [{"text": probe}]}]
