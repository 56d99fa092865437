"""Gemini's codec: OpenRouter's envelope, or litellm's Gemini thinking blocks and thought signatures."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from capplan.executor.policies.reasoning_codec.base import (
    LoopReasoningRule,
    ReasoningCodec,
    ReasoningCodecError,
    entry_list,
    format_of,
    message_field,
    provider_specific_field,
    reasoning_text,
)
from capplan.executor.policies.reasoning_codec.openrouter import (
    OPENROUTER_BLOCK_TYPES,
    OPENROUTER_ENCRYPTED_TYPE,
    OPENROUTER_SUMMARY_TYPE,
    OPENROUTER_TEXT_TYPE,
    openrouter_blocks,
    openrouter_entries,
)
from capplan.executor.reasoning import ReasoningBlock, StructuredReasoning


class GeminiReasoningCodec(ReasoningCodec):
    """Gemini's reasoning on both routes it reaches us by: OpenRouter and litellm's Gemini route.

    OpenRouter (``openrouter/google/gemini-*``): the reasoning arrives as
    ``provider_specific_fields.reasoning_details`` — ``reasoning.text`` entries (Pro lineage,
    readable), ``reasoning.encrypted`` entries (Flash lineage, opaque ``data``), and
    ``reasoning.summary`` entries on routes that summarise. Each entry becomes one block with its
    other keys (``id``, ``format``, ``index``) in ``extras``, and the replay is the
    ``reasoning_details`` list rebuilt entry for entry; OpenRouter forwards it to Google.

    Gemini route (``gemini/*``, ``vertex_ai/*``), as litellm 1.110.2 implements it
    (``llms/vertex_ai/gemini/vertex_and_google_ai_studio_gemini.py`` for responses,
    ``llms/vertex_ai/gemini/transformation.py`` for history; measured against a loopback
    server):

    * a response part with ``thought: true`` becomes a ``thinking_blocks`` entry
      ``{type: thinking, thinking, signature?}`` and its text is concatenated, without a
      separator, into ``reasoning_content``;
    * every part's ``thoughtSignature`` — thought, text or function-call part — is listed in
      part order in ``provider_specific_fields.thought_signatures``; a function call's own
      signature also rides on that tool call (``provider_specific_fields.thought_signature``
      and, by default, the tool-call id ``<id>__thought__<signature>``), which is the tool
      call's business, not this codec's;
    * on the request side litellm turns a history message's ``reasoning_content`` into one
      ``{thought: true, text}`` part and attaches ``provider_specific_fields.thought_signatures[0]``
      to the text part unless a tool call already carries that signature. It never reads
      ``thinking_blocks`` there.

    So extraction keeps the thinking blocks and the full signature list, and replay emits
    exactly the two keys litellm reads: ``reasoning_content`` (the blocks' text joined as litellm
    joined it) and ``provider_specific_fields.thought_signatures`` (verbatim). A block signature
    that is not in that list has no way onto this wire and is refused rather than dropped.
    """

    name: ClassVar[str] = "gemini"

    _ROUTED_TYPES: ClassVar[tuple[str, ...]] = (
        OPENROUTER_TEXT_TYPE,
        OPENROUTER_ENCRYPTED_TYPE,
        OPENROUTER_SUMMARY_TYPE,
    )

    def extract(self, message: Any) -> StructuredReasoning | None:
        """Blocks from the OpenRouter envelope or from litellm's Gemini fields, plus the summary."""
        summary = reasoning_text(message)
        details = entry_list(
            provider_specific_field(message, "reasoning_details"), "provider_specific_fields.reasoning_details"
        )
        native = entry_list(message_field(message, "thinking_blocks"), "thinking_blocks")
        signatures = entry_list(
            provider_specific_field(message, "thought_signatures"), "provider_specific_fields.thought_signatures"
        )
        if details and (native or signatures):
            raise ReasoningCodecError(
                "message carries both OpenRouter reasoning_details and Gemini thinking_blocks / thought_signatures"
            )
        if details:
            blocks = openrouter_blocks(details, allowed=self._ROUTED_TYPES, owner="Gemini")
        else:
            blocks = tuple(self._native_block(raw) for raw in native)
        for signature in signatures:
            if not isinstance(signature, str):
                raise ReasoningCodecError(f"Gemini thought signature must be a string, got {type(signature).__name__}")
        if not blocks and not signatures and summary is None:
            return None
        return StructuredReasoning(blocks=blocks, summary=summary, signatures=tuple(signatures))

    @staticmethod
    def _native_block(raw: Any) -> ReasoningBlock:
        if not isinstance(raw, Mapping):
            raise ReasoningCodecError(f"Gemini thinking block must be a dict, got {type(raw).__name__}")
        if raw.get("type") != "thinking":
            raise ReasoningCodecError(f"unknown Gemini thinking block type {raw.get('type')!r}; expected 'thinking'")
        unknown = sorted(k for k, v in raw.items() if k not in {"type", "thinking", "signature"} and v is not None)
        if unknown:
            raise ReasoningCodecError(f"Gemini thinking block has keys this codec cannot replay: {unknown}")
        text, signature = raw.get("thinking", ""), raw.get("signature")
        if not isinstance(text, str) or not (signature is None or isinstance(signature, str)):
            raise ReasoningCodecError("Gemini thinking block needs a string `thinking` and a string `signature`")
        return ReasoningBlock(type="thinking", text=text, signature=signature)

    def unusable(self, block: ReasoningBlock, reasoning: StructuredReasoning) -> str | None:
        """Blocks another family produced: another format, Anthropic's redacted or signed thinking, summaries."""
        fmt = format_of(block)
        if fmt is not None and not fmt.startswith("google"):
            return f"reasoning in format {fmt!r} came from another model family; Gemini cannot read it"
        if block.type == "redacted_thinking":
            return "Anthropic's redacted thinking is opaque to every other provider"
        if block.type == "thinking" and block.signature is not None and block.signature not in reasoning.signatures:
            return ("a thinking block signed by another provider: its signature is not one of this message's "
                    "Gemini thought signatures")
        if block.type == "reasoning_text" and block.signature is not None and fmt is None:
            return "a signed reasoning entry from another model family (Gemini's entries carry no signature)"
        if block.type == "summary_text" and fmt is None:
            return "a reasoning summary from another model family; Gemini has no field for it"
        return None

    def encode_for_replay(self, reasoning: StructuredReasoning) -> dict[str, Any]:
        """``reasoning_details`` for OpenRouter-borne blocks, else litellm's Gemini history keys."""
        kinds = {block.type for block in reasoning.blocks}
        routed = kinds & OPENROUTER_BLOCK_TYPES
        if routed:
            if kinds - routed or reasoning.signatures:
                raise ReasoningCodecError(
                    "reasoning mixes OpenRouter entries with Gemini thinking blocks / thought signatures; "
                    "one response carries one or the other"
                )
            return {"reasoning_details": openrouter_entries(reasoning.blocks)}
        if kinds - {"thinking"}:
            raise ReasoningCodecError(f"cannot replay {sorted(kinds - {'thinking'})} blocks to Gemini")
        listed = set(reasoning.signatures)
        for block in reasoning.blocks:
            if block.extras:
                raise ReasoningCodecError(
                    f"a Gemini thinking block carries no extra keys, got {[k for k, _ in block.extras]}"
                )
            if block.signature is not None and block.signature not in listed:
                raise ReasoningCodecError(
                    "a thinking block's signature is not among the message's thought signatures; "
                    "litellm's Gemini route replays signatures only from that list"
                )
        payload: dict[str, Any] = {}
        text = "".join(block.text for block in reasoning.blocks)
        if text:
            payload["reasoning_content"] = text
        if reasoning.signatures:
            payload["provider_specific_fields"] = {"thought_signatures": list(reasoning.signatures)}
        return payload

    def loop_needs_own_reasoning(self, *, openrouter: bool) -> LoopReasoningRule | None:
        """Through OpenRouter, every function call of the current turn needs its signed reasoning_details.

        Natively litellm stands Google's documented placeholder in for a missing thought signature,
        which Gemini accepts, so only the OpenRouter route has the rule.
        """
        if not openrouter:
            return None
        return LoopReasoningRule("loop", "\"Gemini models require OpenRouter reasoning details to be preserved in each "
                                 "request.\" (openrouter.gemini_reasoning_details_missing)")
