"""Reasoning codecs: read the reasoning a response carried, and encode it for replay.

A codec does two things for one provider family and nothing else:

* ``extract(message)`` turns ``response.choices[0].message`` (a litellm ``Message`` or a plain
  dict) into a :class:`StructuredReasoning`, or ``None`` when the message carried none;
* ``encode_for_replay(reasoning)`` returns the keys to merge into the next request's assistant
  message so the provider sees its own reasoning again (``{}`` when there is nothing to send).

Where litellm 1.110.2 puts reasoning (read in its source and measured against a loopback
server):

* Anthropic route: ``message.thinking_blocks`` holds the content blocks verbatim
  (``{type: thinking, thinking, signature}`` / ``{type: redacted_thinking, data}``) and
  ``message.reasoning_content`` their text. On the request side litellm forwards a history
  message's ``thinking_blocks`` as Anthropic content blocks ahead of text and tool_use.
* OpenAI-compatible routes (OpenRouter included): ``reasoning_content`` carries the text; an
  OpenRouter ``reasoning_details`` list appears only as
  ``message.provider_specific_fields["reasoning_details"]``, entries verbatim. Any extra key on
  a history message (``reasoning_details``, ``thinking_blocks``) is forwarded to the server
  unchanged.
* Gemini route: see :class:`GeminiReasoningCodec`.

Every codec refuses what it cannot interpret (:class:`ReasoningCodecError`, a ``ValueError``)
instead of dropping it.
"""

from __future__ import annotations

import copy
import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Literal

from capplan.executor.reasoning import BlockType, ReasoningBlock, StructuredReasoning

#: OpenRouter ``reasoning_details`` entry types (https://openrouter.ai/docs, reasoning tokens).
OPENROUTER_TEXT_TYPE = "reasoning.text"
OPENROUTER_ENCRYPTED_TYPE = "reasoning.encrypted"
OPENROUTER_SUMMARY_TYPE = "reasoning.summary"

# OpenRouter entry type -> (our block type, {entry key: ReasoningBlock field it fills})
_OPENROUTER_ENTRY: dict[str, tuple[BlockType, dict[str, str]]] = {
    OPENROUTER_TEXT_TYPE: ("reasoning_text", {"text": "text", "signature": "signature"}),
    OPENROUTER_ENCRYPTED_TYPE: ("encrypted", {"data": "encrypted_data"}),
    OPENROUTER_SUMMARY_TYPE: ("summary_text", {"summary": "text"}),
}
_OPENROUTER_BLOCK_TYPES: frozenset[str] = frozenset(kind for kind, _ in _OPENROUTER_ENTRY.values())


class ReasoningCodecError(ValueError):
    """Reasoning that a codec cannot read or replay without losing part of it."""


def message_field(message: Any, name: str) -> Any:
    """``message.<name>`` for a litellm ``Message``, ``message[name]`` for a dict; ``None`` if absent."""
    if isinstance(message, Mapping):
        return message.get(name)
    return getattr(message, name, None)


def provider_specific_field(message: Any, name: str) -> Any:
    """One key of ``message.provider_specific_fields`` (a dict on litellm messages), or ``None``."""
    fields = message_field(message, "provider_specific_fields")
    if fields is None:
        return None
    if isinstance(fields, Mapping):
        return fields.get(name)
    return getattr(fields, name, None)


def reasoning_text(message: Any) -> str | None:
    """``message.reasoning_content`` as a string, ``None`` when absent or empty."""
    value = message_field(message, "reasoning_content")
    if value is None:
        return None
    if not isinstance(value, str):
        raise ReasoningCodecError(f"reasoning_content must be a string, got {type(value).__name__}")
    return value or None


def entry_list(value: Any, where: str) -> list[Any]:
    """A list-valued message field as a list (``[]`` when absent); anything else is refused."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    raise ReasoningCodecError(f"{where} must be a list, got {type(value).__name__}")


def openrouter_blocks(entries: Iterable[Any], *, allowed: Iterable[str], owner: str) -> tuple[ReasoningBlock, ...]:
    """Decode OpenRouter ``reasoning_details`` entries into blocks, keeping every key.

    The typed keys of an entry (``text`` / ``signature`` / ``data`` / ``summary``) fill the
    block's fields when they are strings; every other key, and a typed key holding anything else
    (OpenRouter allows ``"text": null``), goes into ``extras`` so the replay is verbatim.
    """
    allowed_types = tuple(allowed)
    blocks = []
    for raw in entries:
        if not isinstance(raw, Mapping):
            raise ReasoningCodecError(f"{owner} reasoning_details entry must be a dict, got {type(raw).__name__}")
        entry_type = raw.get("type")
        if entry_type not in allowed_types:
            raise ReasoningCodecError(
                f"unknown {owner} reasoning_details type {entry_type!r}; expected one of {sorted(allowed_types)}"
            )
        block_type, typed = _OPENROUTER_ENTRY[entry_type]
        fields: dict[str, Any] = {}
        extras: list[tuple[str, Any]] = []
        for key, value in raw.items():
            if key == "type":
                continue
            if key in typed and isinstance(value, str):
                fields[typed[key]] = value
            else:
                extras.append((key, copy.deepcopy(value)))
        blocks.append(ReasoningBlock(type=block_type, extras=tuple(extras), **fields))
    return tuple(blocks)


def openrouter_entries(blocks: Iterable[ReasoningBlock]) -> list[dict[str, Any]]:
    """Encode blocks decoded by :func:`openrouter_blocks` back into ``reasoning_details`` entries."""
    entries = []
    for block in blocks:
        if block.type == "reasoning_text":
            entry: dict[str, Any] = {"type": OPENROUTER_TEXT_TYPE, "text": block.text}
            if block.signature is not None:
                entry["signature"] = block.signature
        elif block.type == "encrypted":
            entry = {"type": OPENROUTER_ENCRYPTED_TYPE}
            if block.encrypted_data is not None:
                entry["data"] = block.encrypted_data
        elif block.type == "summary_text":
            entry = {"type": OPENROUTER_SUMMARY_TYPE, "summary": block.text}
        else:
            raise ReasoningCodecError(f"a {block.type!r} block has no OpenRouter reasoning_details form")
        # extras last: a typed key the provider sent as null comes back as null, not as ""
        entry.update((key, copy.deepcopy(value)) for key, value in block.extras)
        entries.append(entry)
    return entries


class ReasoningCodec(ABC):
    """Extract + replay contract for one provider family's reasoning shapes."""

    slot: ClassVar[str] = "reasoning_codec"
    name: ClassVar[str]

    @abstractmethod
    def extract(self, message: Any) -> StructuredReasoning | None:
        """The reasoning ``message`` carried, or ``None``; raises on shapes it cannot interpret."""

    @abstractmethod
    def encode_for_replay(self, reasoning: StructuredReasoning) -> dict[str, Any]:
        """Keys to merge into the assistant message that replays ``reasoning`` (``{}`` for none)."""

    def unusable(self, block: ReasoningBlock, reasoning: StructuredReasoning) -> str | None:
        """Why this codec's target cannot use ``block`` (it is then left out of the replay), or ``None``.

        A history may carry reasoning another model family produced; replaying it would be
        refused by the provider or silently misread, so the request is built without it and the
        result records what was left out and this reason. The default: every block is usable.
        """
        return None

    def for_route(self, *, openrouter: bool) -> ReasoningCodec:
        """The codec as it encodes for one transport; the default encodes the same on every route."""
        return self


def split_replayable(
    codec: ReasoningCodec, reasoning: StructuredReasoning
) -> tuple[StructuredReasoning, tuple[tuple[int, ReasoningBlock, str], ...]]:
    """The reasoning ``codec`` can replay, and each left-out block as (index, block, reason)."""
    left: list[tuple[int, ReasoningBlock, str]] = []
    kept: list[ReasoningBlock] = []
    for index, block in enumerate(reasoning.blocks):
        reason = codec.unusable(block, reasoning)
        if reason is None:
            kept.append(block)
        else:
            left.append((index, block, reason))
    if not left:
        return reasoning, ()
    return dataclasses.replace(reasoning, blocks=tuple(kept)), tuple(left)


def _format_of(block: ReasoningBlock) -> str | None:
    value = dict(block.extras).get("format")
    return value if isinstance(value, str) else None


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


class AnthropicReasoningCodec(ReasoningCodec):
    """Claude's thinking blocks, signatures and redacted blocks, verbatim both ways.

    ``thinking_blocks`` is the source whenever it is populated. On an OpenRouter route litellm
    never fills it (the route is OpenAI-compatible); the same blocks then arrive as
    ``provider_specific_fields.reasoning_details`` entries carrying their signatures, which are
    read as ``reasoning_text`` / ``encrypted`` blocks and replayed as ``reasoning_details``
    rather than dropped. ``reasoning_content`` becomes the summary either way.
    """

    name: ClassVar[str] = "anthropic"

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
        fmt = _format_of(block)
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
        routed = kinds & _OPENROUTER_BLOCK_TYPES
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
        if block.type in _OPENROUTER_BLOCK_TYPES:
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
        fmt = _format_of(block)
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
        routed = kinds & _OPENROUTER_BLOCK_TYPES
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
