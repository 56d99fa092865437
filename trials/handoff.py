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

from capplan.executor.plan import LoopKnobs
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
    return [first_user, {"role": "user", "content": f"Summary of the conversation so far:\n{recap}"}]
