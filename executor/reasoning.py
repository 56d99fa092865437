"""Provider-agnostic reasoning types: what a caller asks for, and what a response carried."""

# no `from __future__ import annotations`: pydantic then reads these annotations as objects
# instead of evaluating strings, a measurable share of every command's start-up

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

ReasoningMode = Literal["off", "adaptive", "budget"]
ReasoningDisplay = Literal["visible", "summary", "omitted"]
EffortLevel = Literal["minimal", "low", "medium", "high", "xhigh"]


class ReasoningConfig(BaseModel):
    """How much a model should reason. Lives on the model config; never a bare string."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    mode: ReasoningMode = Field("off", description="off | adaptive (effort level) | budget (token budget).")
    budget_tokens: int | None = Field(
        None, gt=0, description="Thinking budget for mode=budget; the preset's reasoning_budget_default applies when unset."
    )
    effort_hint: EffortLevel | None = Field(
        None, description="Effort level: required for mode=adaptive, the effort fallback for mode=budget on non-thinking routes."
    )
    display: ReasoningDisplay = Field("visible", description="How the provider should surface the reasoning text.")

    @model_validator(mode="after")
    def _adaptive_needs_effort(self) -> "ReasoningConfig":
        # an adaptive request without a level would leave the provider to pick one silently
        if self.mode == "adaptive" and self.effort_hint is None:
            raise ValueError("reasoning mode 'adaptive' needs effort_hint (minimal|low|medium|high|xhigh)")
        return self


BlockType = Literal["thinking", "redacted_thinking", "summary_text", "reasoning_text", "encrypted"]


@dataclass(frozen=True)
class ReasoningBlock:
    """One unit of reasoning as the provider returned it; signatures and opaque data verbatim.

    ``extras`` holds the keys of the provider's entry that have no field here (OpenRouter's
    ``id`` / ``format`` / ``index`` on a ``reasoning_details`` entry), as ``(key, value)`` pairs
    in the order received. Codecs replay them verbatim: an entry's ``id`` can name the tool call
    its reasoning belongs to, so dropping them would change what the next turn tells the provider.
    """

    type: BlockType
    text: str = ""
    signature: str | None = None
    encrypted_data: str | None = None
    extras: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class StructuredReasoning:
    """Reasoning extracted from one response: ordered blocks plus an optional summary.

    ``signatures`` are opaque signatures the provider attached to the message rather than to a
    block (Gemini's ``thoughtSignature`` on text and function-call parts, which litellm lists in
    ``provider_specific_fields.thought_signatures``), in the order received, replayed verbatim.
    """

    blocks: tuple[ReasoningBlock, ...] = ()
    summary: str | None = None
    budget_used: int | None = None
    signatures: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReasoningLeftOut:
    """A reasoning block of the history that was not replayed, and why.

    ``message`` indexes the request's ``messages``, ``block`` that message's reasoning blocks.
    A history produced by another model family carries reasoning the target cannot use; the
    request is built without it, and this record says so on the built request and the result.
    """

    message: int
    block: int
    type: str
    reason: str
