"""The three retry classes that inspect a returned generation.

Each fires on its own trigger and spends its own budget from the plan's ``loop`` block; a
discarded generation is never appended, and every one is still billed in the metrics.

- empty completion (no text, no tool calls): resample; exhausted -> ``EMPTY_COMPLETION``;
- parser error (tool-call arguments no parser accepted): role=user feedback turn naming the
  tools and quoting the bounded excerpt, resample; exhausted -> accept the ``{}``-coerced call;
- output length (content cut at ``finish_reason == "length"``): role=user feedback turn,
  resample; exhausted -> accept and continue.

Parser errors are checked before length: a structurally broken response is the stronger
signal. The feedback turns are role=user, never system: litellm's Anthropic adapter hoists an
inline system message into the top-level system prompt, which would move the feedback out of
the conversation on exactly the paths that continue it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from capplan.executor.plan import LoopKnobs
from capplan.executor.result import GenerationResult, ParserError


class RetryClass(str, Enum):
    """The four orthogonal retry classes (the API-error one is driven by the loop)."""

    EMPTY_COMPLETION = "empty_completion"
    PARSER_ERROR = "parser_error"
    OUTPUT_LENGTH = "output_length"
    API_ERROR = "api_error"


OUTPUT_LENGTH_FEEDBACK = (
    "Your previous reply was cut off at the output token limit (max_tokens) and was discarded. "
    "Split your next action into smaller pieces so each reply fits within the limit."
)


def parser_error_feedback(errors: Sequence[ParserError], tool_names: Sequence[str]) -> str:
    """The feedback turn for unparseable arguments: which tools, what was received, why."""
    lines = ["Your previous reply was discarded: the arguments of these tool calls could not be parsed as JSON."]
    for err in errors:
        lines.append(f"- tool `{err.tool_name}`: {err.reason}; arguments received: {err.raw_arguments!r}")
    lines.append(f"Available tools: {', '.join(tool_names)}. Call the tool again with a valid JSON object as its arguments.")
    return "\n".join(lines)


def empty_cause(result: GenerationResult) -> str:
    """Why an empty-shape result came back empty, for the retry record and the terminal detail.

    The spec classes a ``finish_reason == "length"`` result with no text and no tool calls as an
    empty completion (the output-length retry is for content-carrying truncations only): when the
    response carried reasoning, the model spent its whole output allowance thinking, a
    reasoning-budget exhaustion, and the record says so rather than only "empty".
    """
    thought = result.reasoning is not None and any(block.text for block in result.reasoning.blocks)
    if result.finish_reason == "length" and thought:
        return ("finish_reason=length with reasoning and no text: reasoning-budget exhaustion "
                "(every output token went to reasoning; raise max_tokens or lower the reasoning effort)")
    return f"finish_reason={result.finish_reason}"


def trigger(result: GenerationResult) -> RetryClass | None:
    """Which returned-result retry class ``result`` triggers, if any (precedence as documented)."""
    if not result.text and not result.tool_calls:
        return RetryClass.EMPTY_COMPLETION
    if result.parser_errors:
        return RetryClass.PARSER_ERROR
    if result.finish_reason == "length":
        return RetryClass.OUTPUT_LENGTH
    return None


@dataclass
class TurnBudgets:
    """Resamples left in the current outer turn, one counter per class."""

    empty: int
    parser: int
    length: int
    api: int

    @classmethod
    def fresh(cls, knobs: LoopKnobs, api_error_retries: int) -> TurnBudgets:
        return cls(knobs.empty_retry_count, knobs.parser_error_retry_count, knobs.output_length_retry_count,
                   api_error_retries)

    def take(self, retry: RetryClass) -> bool:
        """Spend one resample of ``retry``; False when its budget is exhausted."""
        attr = {RetryClass.EMPTY_COMPLETION: "empty", RetryClass.PARSER_ERROR: "parser",
                RetryClass.OUTPUT_LENGTH: "length", RetryClass.API_ERROR: "api"}[retry]
        left: int = getattr(self, attr)
        if left <= 0:
            return False
        setattr(self, attr, left - 1)
        return True
