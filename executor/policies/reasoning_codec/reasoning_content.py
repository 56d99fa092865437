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

Evidence holds for the route it was measured (or ruled) on, never by a name glob for another: a
preset writes each route's scope under ``by_route`` (a provider key, e.g. ``llamacpp`` for a local
llama-server, ``openrouter``), and the compiler keeps the entry for the plan's own route as the
plan's ``replay``, ``evidence`` and ``evidence_route`` (``capplan.compiler.replay_evidence``). A
plan never carries ``by_route``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import Field

from capplan.core.default_factories import empty_dict
from capplan.executor.policies.reasoning_codec.base import ReasoningCodec, ReplayScope, reasoning_text
from capplan.executor.policies.reasoning_codec.openrouter import OPENROUTER_TEXT_TYPE
from capplan.executor.policy_params import PolicyParams
from capplan.executor.reasoning import ReasoningBlock, StructuredReasoning

__all__ = ["ReasoningContentCodec", "RouteEvidence"]


class RouteEvidence(PolicyParams):
    """One route's replay scope and the dated evidence it rests on (a measurement or a provider rule)."""

    replay: ReplayScope = Field(description="Which assistant turns replay reasoning on this route.")
    evidence: str = Field(min_length=1, description="What says so, with its source and date "
                          "(a `capplan replay run` measurement, or `conformance rule <id>, <source>, <date>`).")


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
        evidence_route: str | None = Field(
            None, min_length=1, description="The route (provider key) the evidence was measured or ruled on; "
            "set by the compiler from by_route or a measurement.")
        by_route: dict[str, RouteEvidence] = Field(
            default_factory=empty_dict, description="Per route (provider key): the replay scope and its evidence. The "
            "compiler keeps the plan's own route's entry and warns when there is none; a plan never carries it.")

    def __init__(self, replay: ReplayScope = "all_turns", evidence: str | None = None,
                 openrouter_envelope: bool = False, required: bool = False, evidence_route: str | None = None,
                 by_route: Mapping[str, Any] | None = None) -> None:
        self.replay_scope = replay
        self.evidence = evidence
        self.openrouter_envelope = openrouter_envelope
        self.required = required
        self.evidence_route = evidence_route
        # resolved at compile time (the plan has only the chosen route's scope); kept for for_route
        self.by_route = dict(by_route or {})
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
        other = ReasoningContentCodec(self.replay_scope, self.evidence, self.openrouter_envelope, self.required,
                                      self.evidence_route, self.by_route)
        other.openrouter = openrouter
        return other

    def _cite(self) -> str:
        if not self.evidence:
            return ""
        on = f" (route {self.evidence_route})" if self.evidence_route else ""
        return f"; evidence{on}: {self.evidence}"
