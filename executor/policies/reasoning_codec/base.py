"""The reasoning codec contract, and the message readers every vendor's codec shares."""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, Literal, NamedTuple

from capplan.executor.errors import ReasoningError
from capplan.executor.reasoning import ReasoningBlock, ReasoningOrigin, StructuredReasoning


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

#: What becomes of an origin-bound block made for another model or route: ``drop`` leaves it
#: out; ``text`` replays its text alone, unsigned, where the codec replays unsigned text.
ForeignOrigin = Literal["drop", "text"]


class ReasoningCodec(ABC):
    """Extract + replay contract for one provider family's reasoning shapes.

    ``replay_scope`` says which assistant turns a request replays reasoning on: ``all_turns``
    (every assistant message that carries some), ``in_loop`` (every assistant step of the current
    tool loop: those after the last user message) or ``never``. A codec
    whose target reads replayed reasoning only in some positions (measured by the replay eval)
    narrows it; the request builder applies it, since it depends on a message's place in the
    conversation. ``replay_carrier`` names the wire field the codec replays through (``None``
    when it replays nothing), so measured evidence about that field can be applied to it.

    Replay by origin is decided before the codec sees a block (:func:`split_replayable`): an
    origin-bound block (a signature, an encrypted payload) whose recorded origin is not the
    request's is left out, or replayed as plain text when ``foreign_origin`` is ``text`` and the
    codec takes that text. ``thinks_unasked`` says whether the family reasons even when a
    request turns reasoning off (Gemini, the open-weight thinking models); where it does not
    (Claude), a request with reasoning off replays no history reasoning at all, since the
    provider would read it as thinking (Anthropic: ``When thinking is disabled, an `assistant`
    message in the final position cannot contain `thinking```).
    """

    slot: ClassVar[str] = "reasoning_codec"
    name: ClassVar[str]
    replay_carrier: ClassVar[str | None] = None
    replay_scope: ReplayScope = "all_turns"
    foreign_origin: ForeignOrigin = "drop"
    thinks_unasked: ClassVar[bool] = True

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

    def loop_needs_own_reasoning(self, *, openrouter: bool) -> LoopReasoningRule | None:
        """Which turns of the tool loop a request continues the provider refuses without their own
        reasoning (while the model thinks), and the refusal; ``None``: no such rule.

        A model or route switch leaves origin-bound reasoning out; where the provider then refuses
        the loop step (Anthropic: the turn a tool loop continues must start with a thinking block),
        the request is refused before sending instead, saying how to switch where it is accepted.
        """
        return None


#: ``tail``: the one turn a request continues; ``loop``: every tool-call turn since the last user message
LoopScope = Literal["tail", "loop"]


class LoopReasoningRule(NamedTuple):
    """A provider's refusal of a tool-loop step whose turns lack their own reasoning."""

    scope: LoopScope
    #: the refusal and its conformance rule id, as the refusal before sending cites them
    refusal: str


def split_replayable(
    codec: ReasoningCodec,
    reasoning: StructuredReasoning,
    *,
    target: ReasoningOrigin | None = None,
    reasoning_off: str | None = None,
) -> tuple[StructuredReasoning, tuple[tuple[int, ReasoningBlock, str], ...]]:
    """The reasoning ``codec`` can replay, and each left-out block as (index, block, reason).

    ``target`` is the origin the request goes to: an origin-bound block recorded with another
    origin is left out (or kept as its plain text, see ``ForeignOrigin``), and so are the
    message's signatures (:func:`left_signatures` says why). ``reasoning_off``, when given, is
    why nothing is replayed at all. A block or message without a recorded origin is judged by
    the codec alone: a caller's history that does not say where it was made is replayed as given.
    """
    if target is not None and _signatures_reason(reasoning, target) is not None or (
            reasoning_off is not None and reasoning.signatures):
        reasoning = dataclasses.replace(reasoning, signatures=(), signatures_origin=None)
    left: list[tuple[int, ReasoningBlock, str]] = []
    kept: list[ReasoningBlock] = []
    for index, block in enumerate(reasoning.blocks):
        foreign = _foreign(block, target)
        if foreign is not None:
            plain = ReasoningBlock(type="reasoning_text", text=block.text)
            if (reasoning_off is None and codec.foreign_origin == "text" and block.text
                    and codec.unusable(plain, reasoning) is None):
                kept.append(plain)
                left.append((index, block, f"{foreign}; replayed as its plain text only (foreign_origin: text)"))
            else:
                left.append((index, block, f"{foreign}; left out (foreign_origin: {codec.foreign_origin})"))
            continue
        # the codec's own reason first: it says what is wrong with the block itself
        reason = codec.unusable(block, reasoning) or reasoning_off
        if reason is None:
            kept.append(block)
        else:
            left.append((index, block, reason))
    if not left:
        return reasoning, ()
    return dataclasses.replace(reasoning, blocks=tuple(kept)), tuple(left)


def left_signatures(
    reasoning: StructuredReasoning, *, target: ReasoningOrigin | None = None, reasoning_off: str | None = None
) -> tuple[tuple[int, str], ...]:
    """Each message-level signature :func:`split_replayable` leaves out, as (index, reason)."""
    reason = reasoning_off if reasoning_off is not None else (
        _signatures_reason(reasoning, target) if target is not None else None)
    if reason is None:
        return ()
    return tuple((index, reason) for index in range(len(reasoning.signatures)))


def _foreign(block: ReasoningBlock, target: ReasoningOrigin | None) -> str | None:
    """Why an origin-bound block cannot go to ``target``, or ``None`` when it can (or nothing says)."""
    if target is None or block.origin is None or not block.origin_bound:
        return None
    what = block.origin.mismatch(target)
    if what is None:
        return None
    carrier = "encrypted payload" if block.signature is None else "signature"
    return (f"{what} switch: the block's {carrier} was made by {block.origin.label()} and verifies only there; "
            f"this request goes to {target.label()}")


def _signatures_reason(reasoning: StructuredReasoning, target: ReasoningOrigin) -> str | None:
    origin = reasoning.signatures_origin
    if origin is None or not reasoning.signatures:
        return None
    what = origin.mismatch(target)
    if what is None:
        return None
    return (f"{what} switch: the message's thought signatures were made by {origin.label()} and verify only "
            f"there; this request goes to {target.label()}; left out")


def format_of(block: ReasoningBlock) -> str | None:
    """The ``format`` extra an OpenRouter entry named its model family by, or ``None``."""
    value = dict(block.extras).get("format")
    return value if isinstance(value, str) else None
