"""OpenRouter's ``reasoning_details`` envelope, in which Claude's and Gemini's reasoning both arrive."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from capplan.executor.policies.reasoning_codec.base import ReasoningCodecError
from capplan.executor.reasoning import BlockType, ReasoningBlock

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
OPENROUTER_BLOCK_TYPES: frozenset[str] = frozenset(kind for kind, _ in _OPENROUTER_ENTRY.values())


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
