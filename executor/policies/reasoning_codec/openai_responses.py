"""The Responses API's codec: reasoning items with their encrypted content, replayed verbatim.

On OpenAI's and xAI's Responses API (``store: false``, ``include: ["reasoning.encrypted_content"]``)
each answer's ``output`` holds ``reasoning`` items (an id, a summary, an encrypted payload), each
immediately before the item it preceded: a ``function_call`` or the assistant ``message``.
Handing them back on the next request keeps the model's reasoning across tool calls; the
provider verifies the payload, and refuses a reasoning item that is not followed by its item
(``Item 'rs_…' of type 'reasoning' was provided without its required following item.``) and a
``function_call`` replayed by its id without its reasoning item.

A reasoning item becomes one block: ``encrypted`` with the payload (``summary_text`` when the
answer carried none), its summary texts as the block's text, and under ``extras`` the item's own
fields (``id``, the ``summary`` parts verbatim, any ``content``) and ``follower``: the type, id and
call id of the item it preceded. The request side (:mod:`capplan.executor.responses_request`)
places each replayed item right before that follower and gives the follower its id back.

Only a block with its encrypted payload is replayed: with ``store: false`` the provider keeps
nothing, so a reasoning item sent by id alone is refused (``Items are not persisted when `store`
is set to false``). The payload verifies only for the model and route that made it; a model or
route switch leaves it out by origin (:func:`~capplan.executor.policies.reasoning_codec.base.split_replayable`),
and the request records why.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from capplan.executor.policies.reasoning_codec.base import (
    ReasoningCodec,
    ReasoningCodecError,
    entry_list,
    provider_specific_field,
)
from capplan.executor.reasoning import ReasoningBlock, StructuredReasoning

#: the assistant wire message's key the codec's replay payload goes under; the Responses request
#: mapping turns it into input items (it never reaches a chat endpoint)
REPLAY_KEY = "responses_reasoning"
#: where the Responses answer mapping records the answer's ``output`` items, verbatim
OUTPUT_KEY = "responses_output"
#: fields of a reasoning output item that go back as input (the rest describe the answer)
_ITEM_FIELDS = ("id", "summary", "encrypted_content", "content")
#: fields of the follower the request side needs to place the item and name the follower
_FOLLOWER_FIELDS = ("type", "id", "call_id")


class OpenAIResponsesReasoningCodec(ReasoningCodec):
    """Reasoning items of a Responses answer, replayed with their encrypted content before their follower."""

    name: ClassVar[str] = "openai_responses"
    replay_carrier: ClassVar[str | None] = "reasoning.encrypted_content"

    def extract(self, message: Any) -> StructuredReasoning | None:
        """One block per ``reasoning`` item of the answer's output, in order, each with its follower."""
        output = entry_list(provider_specific_field(message, OUTPUT_KEY), f"provider_specific_fields.{OUTPUT_KEY}")
        blocks: list[ReasoningBlock] = []
        for index, item in enumerate(output):
            if not isinstance(item, Mapping):
                raise ReasoningCodecError(f"{OUTPUT_KEY}[{index}] is {type(item).__name__}, not an item object")
            if item.get("type") != "reasoning":
                continue
            follower = output[index + 1] if index + 1 < len(output) else None
            blocks.append(_block(item, follower, index))
        if not blocks:
            return None
        texts = [block.text for block in blocks if block.text]
        return StructuredReasoning(blocks=tuple(blocks), summary="\n\n".join(texts) if texts else None)

    def encode_for_replay(self, reasoning: StructuredReasoning) -> dict[str, Any]:
        """``{responses_reasoning: [{item, follower}]}``: each reasoning input item and where it goes."""
        entries = [_replay_entry(block) for block in reasoning.blocks]
        return {REPLAY_KEY: entries} if entries else {}

    def unusable(self, block: ReasoningBlock, reasoning: StructuredReasoning) -> str | None:
        """A block without its encrypted payload, or one another family made."""
        if block.type in ("thinking", "redacted_thinking") or block.signature is not None:
            return (f"a {block.type} block (another model family's reasoning) is not a Responses reasoning item; "
                    "the Responses API takes only its own encrypted reasoning items")
        if block.encrypted_data is None:
            return ("a Responses reasoning item is replayed only with its encrypted_content: with store: false the "
                    "provider keeps nothing, and an item sent by id alone is refused")
        return None


def _block(item: Mapping[str, Any], follower: Any, index: int) -> ReasoningBlock:
    summary = item.get("summary")
    parts = entry_list(summary, f"{OUTPUT_KEY}[{index}].summary")
    texts: list[str] = []
    for part in parts:
        if not isinstance(part, Mapping) or not isinstance(part.get("text", ""), str):
            raise ReasoningCodecError(f"{OUTPUT_KEY}[{index}].summary holds a part that is not {{type, text}}")
        texts.append(str(part.get("text", "")))
    encrypted = item.get("encrypted_content")
    if encrypted is not None and not isinstance(encrypted, str):
        raise ReasoningCodecError(f"{OUTPUT_KEY}[{index}].encrypted_content must be a string, "
                                  f"got {type(encrypted).__name__}")
    extras: dict[str, Any] = {key: item[key] for key in _ITEM_FIELDS if key in item and key != "encrypted_content"
                              and item[key] is not None}
    if isinstance(follower, Mapping):
        extras["follower"] = {key: follower[key] for key in _FOLLOWER_FIELDS if isinstance(follower.get(key), str)}
    return ReasoningBlock(type="encrypted" if encrypted else "summary_text", text="\n\n".join(texts),
                          encrypted_data=encrypted, extras=tuple(extras.items()))


def _replay_entry(block: ReasoningBlock) -> dict[str, Any]:
    extras = dict(block.extras)
    item: dict[str, Any] = {"type": "reasoning"}
    if isinstance(extras.get("id"), str):
        item["id"] = extras["id"]
    summary = extras.get("summary")
    if isinstance(summary, list):
        item["summary"] = summary
    else:
        # a caller's history that kept only the text: one summary part (summary is required on input)
        item["summary"] = [{"type": "summary_text", "text": block.text}] if block.text else []
    if block.encrypted_data is not None:
        item["encrypted_content"] = block.encrypted_data
    if "content" in extras:
        item["content"] = extras["content"]
    follower = extras.get("follower")
    return {"item": item, "follower": dict(follower) if isinstance(follower, Mapping) else None}
