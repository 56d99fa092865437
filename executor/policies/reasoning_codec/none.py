"""The codec of routes that surface no reasoning."""

from __future__ import annotations

from typing import Any, ClassVar

from capplan.executor.policies.reasoning_codec.base import ReasoningCodec
from capplan.executor.reasoning import ReasoningBlock, StructuredReasoning


class NoReasoningCodec(ReasoningCodec):
    """For models that surface no reasoning: extracts nothing, replays nothing.

    Replaying nothing also keeps reasoning from another model (a cross-provider history) off a
    wire that has no field for it.
    """

    name: ClassVar[str] = "none"

    def extract(self, message: Any) -> StructuredReasoning | None:
        """Always ``None``."""
        return None

    def encode_for_replay(self, reasoning: StructuredReasoning) -> dict[str, Any]:
        """Always ``{}``."""
        return {}

    def unusable(self, block: ReasoningBlock, reasoning: StructuredReasoning) -> str | None:
        """Every block: this route has no field for reasoning."""
        return "this route takes no replayed reasoning (reasoning_codec: none)"
