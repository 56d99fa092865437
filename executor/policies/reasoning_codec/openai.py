"""OpenAI's codec: the flat ``reasoning_content`` summary, never replayed."""

from __future__ import annotations

from typing import Any, ClassVar

from capplan.executor.policies.reasoning_codec.base import ReasoningCodec, reasoning_text
from capplan.executor.reasoning import ReasoningBlock, StructuredReasoning


class OpenAIReasoningCodec(ReasoningCodec):
    """The flat ``reasoning_content`` summary; OpenAI accepts no echoed reasoning, so no replay."""

    name: ClassVar[str] = "openai"

    def extract(self, message: Any) -> StructuredReasoning | None:
        """One ``summary_text`` block holding ``reasoning_content``, the same text as summary."""
        text = reasoning_text(message)
        if text is None:
            return None
        return StructuredReasoning(blocks=(ReasoningBlock(type="summary_text", text=text),), summary=text)

    def encode_for_replay(self, reasoning: StructuredReasoning) -> dict[str, Any]:
        """Always ``{}``: there is no stateful interleaved-thinking contract to satisfy."""
        return {}

    def unusable(self, block: ReasoningBlock, reasoning: StructuredReasoning) -> str | None:
        """Every block: OpenAI-family routes accept no echoed reasoning."""
        return "OpenAI-family routes take no replayed reasoning"
