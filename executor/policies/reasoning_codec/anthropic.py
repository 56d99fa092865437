"""Anthropic's codec: Claude's thinking blocks, natively or inside OpenRouter's envelope."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

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
    OPENROUTER_TEXT_TYPE,
    openrouter_blocks,
    openrouter_entries,
)
from capplan.executor.reasoning import ReasoningBlock, StructuredReasoning


class AnthropicReasoningCodec(ReasoningCodec):
    """Claude's thinking blocks, signatures and redacted blocks, verbatim both ways.

    ``thinking_blocks`` is the source whenever it is populated. On an OpenRouter route litellm
    never fills it (the route is OpenAI-compatible); the same blocks then arrive as
    ``provider_specific_fields.reasoning_details`` entries carrying their signatures, which are
    read as ``reasoning_text`` / ``encrypted`` blocks and replayed as ``reasoning_details``
    rather than dropped. ``reasoning_content`` becomes the summary either way.
    """

    name: ClassVar[str] = "anthropic"
    #: Claude thinks only when the request enables thinking (see ReasoningCodec.thinks_unasked)
    thinks_unasked: ClassVar[bool] = False

    #: ``None``: each block replays in the envelope it arrived in. :meth:`for_route` pins the one
    #: envelope the route reads: ``native`` (litellm's Anthropic route reads ``thinking_blocks``)
    #: or ``openrouter`` (OpenRouter documents ``reasoning_details``, entries passed back with their
    #: signature and ``format``; https://openrouter.ai/docs/use-cases/reasoning-tokens, "Preserving
    #: reasoning blocks"). A top-level ``thinking_blocks`` key is not part of OpenRouter's API.
    route: Literal["native", "openrouter"] | None = None

    #: The ``format`` OpenRouter gives Claude's reasoning_details entries.
    OPENROUTER_FORMAT: ClassVar[str] = "anthropic-claude-v1"

    _NATIVE_KEYS: ClassVar[dict[str, frozenset[str]]] = {
        "thinking": frozenset({"type", "thinking", "signature"}),
        "redacted_thinking": frozenset({"type", "data"}),
    }

    def extract(self, message: Any) -> StructuredReasoning | None:
        """Blocks from ``thinking_blocks`` (else OpenRouter details) plus the text as summary."""
        summary = reasoning_text(message)
        native = entry_list(message_field(message, "thinking_blocks"), "thinking_blocks")
        if native:
            blocks = tuple(self._native_block(raw) for raw in native)
        else:
            details = entry_list(
                provider_specific_field(message, "reasoning_details"), "provider_specific_fields.reasoning_details"
            )
            blocks = openrouter_blocks(
                details, allowed=(OPENROUTER_TEXT_TYPE, OPENROUTER_ENCRYPTED_TYPE), owner="Anthropic"
            )
        if not blocks and summary is None:
            return None
        return StructuredReasoning(blocks=blocks, summary=summary)

    def _native_block(self, raw: Any) -> ReasoningBlock:
        if not isinstance(raw, Mapping):
            raise ReasoningCodecError(f"Anthropic thinking block must be a dict, got {type(raw).__name__}")
        block_type = raw.get("type")
        if block_type not in self._NATIVE_KEYS:
            raise ReasoningCodecError(
                f"unknown Anthropic thinking block type {block_type!r}; expected one of {sorted(self._NATIVE_KEYS)}"
            )
        # a null-valued key carries nothing; any other unknown key is data we would drop
        unknown = sorted(k for k, v in raw.items() if k not in self._NATIVE_KEYS[block_type] and v is not None)
        if unknown:
            raise ReasoningCodecError(f"Anthropic {block_type} block has keys this codec cannot replay: {unknown}")
        if block_type == "thinking":
            text = raw.get("thinking", "")
            signature = raw.get("signature")
            if not isinstance(text, str) or not (signature is None or isinstance(signature, str)):
                raise ReasoningCodecError("Anthropic thinking block needs a string `thinking` and a string `signature`")
            # empty text with a signature is Claude's display="omitted": kept so the signature replays
            return ReasoningBlock(type="thinking", text=text, signature=signature)
        data = raw.get("data")
        if not isinstance(data, str):
            raise ReasoningCodecError("Anthropic redacted_thinking block needs a string `data`")
        return ReasoningBlock(type="redacted_thinking", text="", encrypted_data=data)

    def loop_needs_own_reasoning(self, *, openrouter: bool) -> LoopReasoningRule | None:
        """The turn a tool loop continues must start with its own thinking block while Claude thinks."""
        rule = "openrouter.anthropic_thinking_block_missing" if openrouter else "anthropic.thinking_at_loop_tail"
        return LoopReasoningRule("tail", "\"Expected `thinking` or `redacted_thinking`, but found `tool_use`. When "
                                 f"`thinking` is enabled, a final `assistant` message must start with a thinking block\" ({rule})")

    def for_route(self, *, openrouter: bool) -> ReasoningCodec:
        """A copy that replays every usable block in the envelope this route reads (made once per
        route and instance: a codec is stateless, and every client of a plan asks its own)."""
        twins: dict[bool, ReasoningCodec] = self.__dict__.setdefault("_twins", {})
        twin = twins.get(openrouter)
        if twin is None:
            made = copy.copy(self)
            made.route = "openrouter" if openrouter else "native"
            twin = twins.setdefault(openrouter, made)
        return twin

    def unusable(self, block: ReasoningBlock, reasoning: StructuredReasoning) -> str | None:
        """Blocks Claude cannot verify: another family's, unsigned ones, anonymous opaque payloads."""
        fmt = format_of(block)
        if fmt is not None and not fmt.startswith("anthropic"):
            return (f"reasoning in format {fmt!r} came from another model family; "
                    "Claude accepts only thinking blocks it signed")
        if block.type == "summary_text":
            return "a reasoning summary from another model family carries no Anthropic signature"
        if block.type in ("thinking", "reasoning_text") and block.signature is None:
            return "an unsigned thinking block: Anthropic refuses thinking whose signature it cannot verify"
        if block.type == "encrypted" and fmt is None:
            return "an opaque reasoning payload that names no Anthropic format"
        return None

    def encode_for_replay(self, reasoning: StructuredReasoning) -> dict[str, Any]:
        """``{"thinking_blocks": [...]}`` (or OpenRouter's ``reasoning_details``); ``{}`` for no blocks."""
        if not reasoning.blocks:
            return {}
        if self.route == "openrouter":
            return {"reasoning_details": [self._openrouter_entry(block) for block in reasoning.blocks]}
        if self.route == "native":
            return {"thinking_blocks": [self._native_entry(self._as_native(block)) for block in reasoning.blocks]}
        kinds = {block.type for block in reasoning.blocks}
        if "summary_text" in kinds:
            raise ReasoningCodecError(
                "a summary_text block is an OpenAI-family shape and cannot be replayed to Anthropic"
            )
        native = kinds & set(self._NATIVE_KEYS)
        routed = kinds & OPENROUTER_BLOCK_TYPES
        if native and routed:
            raise ReasoningCodecError(
                f"reasoning mixes Anthropic thinking blocks with OpenRouter entries ({sorted(kinds)}); "
                "one response carries one or the other"
            )
        if routed:
            return {"reasoning_details": openrouter_entries(reasoning.blocks)}
        unknown = kinds - native
        if unknown:
            raise ReasoningCodecError(f"cannot replay {sorted(unknown)} blocks to Anthropic")
        return {"thinking_blocks": [self._native_entry(block) for block in reasoning.blocks]}

    def _openrouter_entry(self, block: ReasoningBlock) -> dict[str, Any]:
        if block.type in OPENROUTER_BLOCK_TYPES:
            (entry,) = openrouter_entries([block])
        elif block.type == "thinking":
            entry = {"type": OPENROUTER_TEXT_TYPE, "text": block.text}
            if block.signature is not None:
                entry["signature"] = block.signature
        elif block.type == "redacted_thinking":
            if block.encrypted_data is None:
                raise ReasoningCodecError("a redacted_thinking block without its data cannot be replayed")
            entry = {"type": OPENROUTER_ENCRYPTED_TYPE, "data": block.encrypted_data}
        else:
            raise ReasoningCodecError(f"cannot replay a {block.type!r} block to Anthropic")
        # OpenRouter routes an entry back to Claude by its format; the blocks here are Claude's
        entry.setdefault("format", self.OPENROUTER_FORMAT)
        return entry

    @staticmethod
    def _as_native(block: ReasoningBlock) -> ReasoningBlock:
        # OpenRouter's id / index / format have no place in Anthropic's own block shape
        if block.type == "reasoning_text":
            return ReasoningBlock(type="thinking", text=block.text, signature=block.signature)
        if block.type == "encrypted":
            return ReasoningBlock(type="redacted_thinking", encrypted_data=block.encrypted_data)
        return block

    @staticmethod
    def _native_entry(block: ReasoningBlock) -> dict[str, Any]:
        if block.extras:
            raise ReasoningCodecError(
                f"an Anthropic {block.type} block carries no extra keys, got {[k for k, _ in block.extras]}"
            )
        if block.type == "thinking":
            entry: dict[str, Any] = {"type": "thinking", "thinking": block.text}
            if block.signature is not None:
                entry["signature"] = block.signature
            return entry
        if block.encrypted_data is None:
            raise ReasoningCodecError("a redacted_thinking block without its data cannot be replayed")
        # the replay shape of a redacted block is type + data only: no thinking, no signature
        return {"type": "redacted_thinking", "data": block.encrypted_data}
