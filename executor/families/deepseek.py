"""Reasoning replay for routes that return readable but unsigned reasoning (DeepSeek V4 lineage).

These routes (DeepSeek V4, Grok, GPT-OSS and Cohere Command A+ over OpenRouter or an
OpenAI-shaped gateway) surface reasoning as the flat ``reasoning_content`` summary with no
per-block signature. The OpenAI codec reads that summary but replays nothing, so the text never
reaches the next turn. This codec keeps the OpenAI extraction unchanged and replays the text as
OpenRouter's unsigned ``reasoning_details`` envelope.

What it buys is payload-level: the next request carries the previous turn's reasoning text.
Whether the route reads it is the route's business: an A/B on ``deepseek-v4-flash`` (2026-08-04)
measured the same turn-2 ``prompt_tokens`` with and without the field, i.e. accepted and
ignored, while the Gemini lineage the shape comes from does read it.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from capplan.executor.policies.reasoning_codec import OPENROUTER_TEXT_TYPE, ForeignOrigin, OpenAIReasoningCodec
from capplan.executor.policy_params import PolicyParams
from capplan.executor.reasoning import ReasoningBlock, StructuredReasoning

__all__ = ["OpenAISummaryReplayReasoningCodec"]


class OpenAISummaryReplayReasoningCodec(OpenAIReasoningCodec):
    """OpenAI summary extraction + unsigned ``reasoning_details`` replay.

    One ``{"type": "reasoning.text", "text": ...}`` entry per block that has text, ``{}`` when
    none does. No ``signature`` key, because these routes mint none and a synthesised one would
    claim a capability the route lacks; and no ``format`` key, because the proven request shape
    carries none and the only value these routes report is the non-committal ``"unknown"``.
    Opaque bytes from another provider (a signature, an encrypted payload) are bound to the
    provider that minted them, so a cross-provider history contributes only its text here.

    A block recorded with another origin whose carrier is bound to it (a signed or encrypted
    block another model or route made) is left out by default; ``foreign_origin: text`` replays
    its text alone instead, the one form this route's unsigned envelope can carry.
    """

    name: ClassVar[str] = "openai_summary_replay"

    class Params(PolicyParams):
        """What becomes of another origin's signed or encrypted reasoning."""

        foreign_origin: ForeignOrigin = Field(
            "drop", description="A signed or encrypted block made by another model or route: drop (left out, "
            "recorded) or text (its text replayed unsigned, recorded).")

    def __init__(self, foreign_origin: ForeignOrigin = "drop") -> None:
        self.foreign_origin = foreign_origin

    def unusable(self, block: ReasoningBlock, reasoning: StructuredReasoning) -> str | None:
        """Blocks without text: an opaque payload is bound to the provider that minted it."""
        if block.text:
            return None
        return "an opaque reasoning payload without text; this route replays reasoning text only"

    def encode_for_replay(self, reasoning: StructuredReasoning) -> dict[str, Any]:
        """``{"reasoning_details": [...]}`` carrying each block's text; ``{}`` when there is none."""
        details = [{"type": OPENROUTER_TEXT_TYPE, "text": block.text} for block in reasoning.blocks if block.text]
        if not details:
            return {}
        return {"reasoning_details": details}
