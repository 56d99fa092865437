"""Context-window handoff: summarise the history and reset the wire view.

Armed when the plan's ``loop`` block sets both ``max_context_tokens`` and
``context_watermark``. Two paths: before a turn, when the previous agent generation's
``prompt_tokens + context_watermark >= max_context_tokens``; and reactively, when a
generation raises a context-window error (summarise, then retry once inline). Either way the
wire view becomes ``[first user message, user(recap)]`` while the recorded view keeps the full
history plus one system marker. One summarise per event, never iterated. Three loud failures
end the trial as ``CONTEXT_WINDOW_EXCEEDED``: an empty recap, the summariser's own call
exceeding the window, and the retry after a summarise exceeding it again.

The summarise step is a policy seam (:class:`SummarizePolicy`, the loop's
``LoopConfig.summarize_policy``), as in the spec: the loop decides *when* (the watermark or the
window error) and what the wire becomes; the policy decides *how* the recap is written. The
default, :class:`LlmSummarizer`, is an LLM call through the trial's own client (the same model that
produced the history), billed to the trial; any policy gets the same ``generate`` (so its calls
are billed and recorded as ``summarize`` calls) and the same loud failure on an empty recap.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from capplan.executor.messages import ReasoningIn
from capplan.executor.plan import LoopKnobs
from capplan.executor.reasoning import ReasoningLeftOut
from capplan.executor.result import GenerationResult

SUMMARIZER_SYSTEM = (
    "You hand a conversation over to a colleague who will continue it without seeing it. Write a recap "
    "that keeps every fact the conversation established: names, ids, numbers, what the user asked for, "
    "what has been done (including tool results), what was decided, and what is still pending. "
    "Write only the recap."
)


#: The origin the summarise marker carries in the recorded view.
SUMMARY_ORIGIN = "summary"


class SummarizerFailedError(Exception):
    """The summariser returned an empty recap."""


def armed(knobs: LoopKnobs) -> bool:
    """Whether the plan arms the seam (both knobs set)."""
    return knobs.max_context_tokens is not None and knobs.context_watermark is not None


def over_watermark(knobs: LoopKnobs, last_prompt_tokens: int | None) -> bool:
    """The pre-turn check: the previous generation's prompt plus the watermark reaches the window."""
    if not armed(knobs) or last_prompt_tokens is None:
        return False
    assert knobs.max_context_tokens is not None and knobs.context_watermark is not None
    return last_prompt_tokens + knobs.context_watermark >= knobs.max_context_tokens


def render_transcript(messages: Sequence[dict[str, Any]]) -> str:
    """The wire history as plain text, one block per message (tool calls and results included)."""
    blocks = []
    for m in messages:
        role = m.get("role", "?")
        text = m.get("content") or ""
        if not isinstance(text, str):
            text = json.dumps(text, ensure_ascii=False)
        calls = m.get("tool_calls") or []
        for call in calls:
            fn = call.get("function", {})
            args = fn.get("arguments")
            text += f"\n[calls {fn.get('name')} with {args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)}]"
        if role == "tool":
            blocks.append(f"TOOL RESULT ({m.get('tool_call_id')}):\n{text}")
        else:
            blocks.append(f"{role.upper()}:\n{text.strip()}")
    return "\n\n".join(blocks)


Generate = Callable[[dict[str, Any]], GenerationResult]


class SummarizePolicy(Protocol):
    """How a recap is written from the wire history (the loop decides when, and what the wire becomes).

    ``generate`` sends one request (``{"system": …, "messages": […]}``) through the trial's client,
    billed and recorded as a ``summarize`` call; a policy may call it once or not at all. It returns
    the recap and the generation that produced it. Provider errors propagate (the loop classifies
    them); an empty recap is refused by :func:`summarize` whatever the policy.
    """

    def summarize(self, generate: Generate, system_prompt: str,
                  messages: Sequence[dict[str, Any]]) -> tuple[str, GenerationResult]:
        ...


@dataclass(frozen=True)
class LlmSummarizer:
    """The default policy: the trial's own model recaps the transcript under ``instructions``."""

    instructions: str = SUMMARIZER_SYSTEM

    def summarize(self, generate: Generate, system_prompt: str,
                  messages: Sequence[dict[str, Any]]) -> tuple[str, GenerationResult]:
        request = {
            "system": self.instructions,
            "messages": [{
                "role": "user",
                "content": f"The assistant's instructions were:\n{system_prompt}\n\nThe conversation so far:\n\n"
                           f"{render_transcript(messages)}\n\nWrite the recap now.",
            }],
        }
        result = generate(request)
        return result.text, result


DEFAULT_SUMMARIZER: SummarizePolicy = LlmSummarizer()


def summarize(generate: Generate, system_prompt: str, messages: Sequence[dict[str, Any]],
              policy: SummarizePolicy = DEFAULT_SUMMARIZER) -> tuple[str, GenerationResult]:
    """One summarise through ``policy``; raises :class:`SummarizerFailedError` on an empty recap."""
    recap, result = policy.summarize(generate, system_prompt, messages)
    recap = recap.strip()
    if not recap:
        raise SummarizerFailedError("the summariser returned an empty recap")
    return recap, result


def compacted(first_user: dict[str, Any], recap: str) -> list[dict[str, Any]]:
    """The wire view after a summarise."""
    return handoff_wire(first_user, recap)[0]


#: why an origin-bound reasoning block kept across a handoff is not replayed
HANDOFF = ("context handoff: a summary replaced the context this block was made in, and its signature or "
           "encrypted payload verifies only against that context")


def handoff_wire(first_user: dict[str, Any], recap: str, kept: Sequence[dict[str, Any]] = ()
                 ) -> tuple[list[dict[str, Any]], tuple[ReasoningLeftOut, ...]]:
    """The wire view after a summarise, with ``kept`` (messages carried past the recap) after it.

    Every origin-bound reasoning block of what is kept (a signature, an encrypted payload, a
    message's thought signatures) is dropped, and each drop recorded with the reason
    :data:`HANDOFF` at its place in the new wire: the provider verified it against the history it
    was made in, which the recap replaced. Plain reasoning text stays.
    """
    wire = [first_user, {"role": "user", "content": f"Summary of the conversation so far:\n{recap}"}]
    records: list[ReasoningLeftOut] = []
    renamed: dict[str, str] = {}
    for message in kept:
        stripped, left = _without_bound_reasoning(message, len(wire), renamed)
        if stripped.get("role") == "tool" and stripped.get("tool_call_id") in renamed:
            stripped = {**stripped, "tool_call_id": renamed[stripped["tool_call_id"]]}
        wire.append(stripped)
        records += left
    return wire, tuple(records)


#: litellm's separator of a Gemini function call's thought signature inside the call's id
THOUGHT_IN_CALL_ID = "__thought__"


def _without_bound_reasoning(message: dict[str, Any], index: int,
                             renamed: dict[str, str]) -> tuple[dict[str, Any], list[ReasoningLeftOut]]:
    """``message`` without its origin-bound reasoning; a dropped thought signature also leaves the
    tool-call ids that carry it (recorded in ``renamed``, so their results are renamed too)."""
    raw = message.get("reasoning") if message.get("role") == "assistant" else None
    if raw is None:
        return message, []
    reasoning = ReasoningIn.model_validate(raw)
    left = [ReasoningLeftOut(index, i, block.type, HANDOFF) for i, block in enumerate(reasoning.blocks)
            if block.to_block().origin_bound]
    left += [ReasoningLeftOut(index, i, "signature", HANDOFF) for i in range(len(reasoning.signatures))]
    if not left:
        return message, []
    bound = {record.block for record in left if record.type != "signature"}
    kept = reasoning.model_copy(update={
        "blocks": [block for i, block in enumerate(reasoning.blocks) if i not in bound],
        "signatures": [], "signatures_origin": None,
    })
    out = {**message, "reasoning": kept.model_dump(mode="json", exclude_none=True)}
    calls = []
    for call in message.get("tool_calls") or []:
        head, separator, signature = str(call.get("id", "")).partition(THOUGHT_IN_CALL_ID)
        if separator and head and signature in reasoning.signatures:
            renamed[call["id"]] = head
            call = {**call, "id": head}
        calls.append(call)
    if calls:
        out["tool_calls"] = calls
    return out, left
