"""The reasoning codec contract, and the message readers every vendor's codec shares."""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from capplan.executor.errors import ReasoningError
from capplan.executor.reasoning import ReasoningBlock, StructuredReasoning


class ReasoningCodecError(ReasoningError):
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


#: Which assistant turns of a request carry replayed reasoning (see :class:`ReasoningCodec`).
ReplayScope = Literal["all_turns", "in_loop", "never"]


class ReasoningCodec(ABC):
    """Extract + replay contract for one provider family's reasoning shapes.

    ``replay_scope`` says which assistant turns a request replays reasoning on: ``all_turns``
    (every assistant message that carries some), ``in_loop`` (every assistant step of the current
    tool loop: those after the last user message) or ``never``. A codec
    whose target reads replayed reasoning only in some positions (measured by the replay eval)
    narrows it; the request builder applies it, since it depends on a message's place in the
    conversation. ``replay_carrier`` names the wire field the codec replays through (``None``
    when it replays nothing), so measured evidence about that field can be applied to it.
    """

    slot: ClassVar[str] = "reasoning_codec"
    name: ClassVar[str]
    replay_carrier: ClassVar[str | None] = None
    replay_scope: ReplayScope = "all_turns"

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


def format_of(block: ReasoningBlock) -> str | None:
    """The ``format`` extra an OpenRouter entry named its model family by, or ``None``."""
    value = dict(block.extras).get("format")
    return value if isinstance(value, str) else None
