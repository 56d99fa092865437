"""The ``reasoning_content`` codec: the open-weight families served by OpenAI-compatible servers.

llama.cpp's ``llama-server``, vLLM, SGLang and DeepSeek's own API return a model's reasoning as
``message.reasoning_content`` and read it back from the same field on a history assistant
message: the chat template (Qwen3, GLM-4.6/4.7, Kimi-K2, Seed-OSS, DeepSeek-R1/V4) renders it,
or drops it, by position. Which positions a template keeps is a measured fact (the replay eval,
``capplan replay``), carried in the ``replay`` parameter with the ``evidence`` it rests on:

* ``all_turns``: every assistant turn that carries reasoning replays it;
* ``in_loop``: every assistant step of the current tool loop, i.e. since the last user message (a
  template that keeps reasoning only for the current turn renders all of those steps and nothing
  before them, so sending the earlier turns' reasoning only costs bytes);
* ``never``: nothing is replayed (the template ignores it, or the server rejects the field).

OpenRouter reads reasoning only from its ``reasoning_details`` envelope, so on that route the
codec replays through it when ``openrouter_envelope`` is on, and replays nothing otherwise.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from capplan.executor.policies.reasoning_codec.base import ReasoningCodec, ReplayScope, reasoning_text
from capplan.executor.policies.reasoning_codec.openrouter import OPENROUTER_TEXT_TYPE
from capplan.executor.policy_params import PolicyParams
from capplan.executor.reasoning import ReasoningBlock, StructuredReasoning

__all__ = ["ReasoningContentCodec"]


class ReasoningContentCodec(ReasoningCodec):
    """``message.reasoning_content`` in, ``assistant.reasoning_content`` out, on the measured turns.

    ``extract`` keeps the text as one ``reasoning_text`` block (it is the model's own reasoning,
    not a summary). A history block without text (a signature, an encrypted payload another
    provider minted) has no ``reasoning_content`` form and is left out, with the reason.
    """

    name: ClassVar[str] = "reasoning_content"
    replay_carrier: ClassVar[str | None] = "reasoning_content"

    class Params(PolicyParams):
        """Where replayed reasoning is sent, and the measurement that says so."""

        replay: ReplayScope = Field(
            "all_turns", description="Which assistant turns replay reasoning: all_turns | in_loop | never.")
        evidence: str | None = Field(
            None, min_length=1, description="The dated measurement the replay scope rests on (cited by explain).")
        openrouter_envelope: bool = Field(
            False, description="On the OpenRouter route, replay as reasoning_details text entries (else replay nothing there).")
        required: bool = Field(
            False, description="The endpoint refuses a tool loop whose turns lack their reasoning: evidence that "
            "it rejects reasoning_content is then a compile-time error.")

    def __init__(self, replay: ReplayScope = "all_turns", evidence: str | None = None,
                 openrouter_envelope: bool = False, required: bool = False) -> None:
        self.replay_scope = replay
        self.evidence = evidence
        self.openrouter_envelope = openrouter_envelope
        self.required = required
        self.openrouter = False

    def extract(self, message: Any) -> StructuredReasoning | None:
        """One ``reasoning_text`` block holding ``reasoning_content``; ``None`` when absent or empty."""
        text = reasoning_text(message)
        if text is None:
            return None
        return StructuredReasoning(blocks=(ReasoningBlock(type="reasoning_text", text=text),))

    def encode_for_replay(self, reasoning: StructuredReasoning) -> dict[str, Any]:
        """``{"reasoning_content": text}`` (blocks' texts joined), or the OpenRouter envelope; ``{}`` when none."""
        texts = [block.text for block in reasoning.blocks if block.text]
        if not texts or self.replay_scope == "never":
            return {}
        if self.openrouter:
            if not self.openrouter_envelope:
                return {}
            return {"reasoning_details": [{"type": OPENROUTER_TEXT_TYPE, "text": text} for text in texts]}
        return {"reasoning_content": "\n\n".join(texts)}

    def unusable(self, block: ReasoningBlock, reasoning: StructuredReasoning) -> str | None:
        """Why a block is not replayed: replay off (by evidence), the route, or no text to send."""
        if self.replay_scope == "never":
            return "replay is off for this route (reasoning_codec reasoning_content, replay: never)" + self._cite()
        if self.openrouter and not self.openrouter_envelope:
            return "this plan replays no reasoning through OpenRouter (openrouter_envelope: false)"
        if not block.text:
            return "an opaque reasoning payload without text has no reasoning_content form"
        return None

    def for_route(self, *, openrouter: bool) -> ReasoningCodec:
        """The same codec, encoding in OpenRouter's envelope on that route."""
        if openrouter == self.openrouter:
            return self
        other = ReasoningContentCodec(self.replay_scope, self.evidence, self.openrouter_envelope, self.required)
        other.openrouter = openrouter
        return other

    def _cite(self) -> str:
        return f"; evidence: {self.evidence}" if self.evidence else ""
