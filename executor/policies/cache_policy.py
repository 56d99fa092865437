"""Prompt-cache markers: which parts of a request carry ``cache_control``.

The policy runs twice per request: ``apply`` on the system prompt and tools after enrichment and
sanitising (so the sanitiser never sees a marker), and ``apply_messages`` on the wire-shape
messages after conversion (marker placement needs the exact list litellm receives).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

SystemPrompt = str | list[dict[str, Any]] | None

#: Anthropic's ephemeral marker: the default 5-minute TTL; the policy deliberately has no TTL knob.
EPHEMERAL: dict[str, str] = {"type": "ephemeral"}
#: Anthropic's limit on blocks with ``cache_control`` in one request (system, tools and messages)
MAX_BREAKPOINTS = 4
#: the marker ``apply`` puts on the last tool, counted against the limit by ``apply_messages``
TOOLS_BREAKPOINT = 1


class CachePolicy(ABC):
    """Where cache markers go, in the two phases of request building."""

    slot: ClassVar[str] = "cache_policy"
    name: ClassVar[str]

    @abstractmethod
    def apply(
        self,
        system: SystemPrompt,
        tools: list[dict[str, Any]] | None,
        messages: list[dict[str, Any]],
    ) -> tuple[SystemPrompt, list[dict[str, Any]] | None, list[dict[str, Any]]]:
        """Mark the system prompt and tools; returns ``(system, tools, messages)``."""

    @abstractmethod
    def apply_messages(self, wire_messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Mark message positions in the wire-shape list; returns the new list."""


class NoCache(CachePolicy):
    """No markers: both phases hand their inputs back untouched."""

    name: ClassVar[str] = "none"

    def apply(
        self,
        system: SystemPrompt,
        tools: list[dict[str, Any]] | None,
        messages: list[dict[str, Any]],
    ) -> tuple[SystemPrompt, list[dict[str, Any]] | None, list[dict[str, Any]]]:
        """``(system, tools, messages)`` as given."""
        return system, tools, messages

    def apply_messages(self, wire_messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``wire_messages`` as given."""
        return wire_messages


class AnthropicEphemeralCache(CachePolicy):
    """Anthropic ephemeral markers within the Messages API's 4-breakpoint budget.

    At most four markers: the last system block (1), the last tool (1), and up to two message
    anchors — the tail message when it is ``user`` or ``tool``, and the most recent ``user``
    message before it. The early user message rarely changes across a trajectory, so every
    later request re-marks the same prefix and reads it from the cache.

    Anthropic counts its limit (``A maximum of 4 blocks with cache_control may be provided``)
    over the whole request, markers a caller brought included. A list system prompt keeps the
    caller's markers on its earlier blocks, and a list-content anchor those on its earlier
    parts; the message anchors get what the system message and the last tool leave of the
    four, the tail first, and a request whose own markers already exceed it is refused here
    rather than by the provider. (The request format has no field for a marker on any other
    message, so none reaches the wire messages but these.)

    Assistant messages are never anchors: litellm merges their ``tool_calls`` into Anthropic's
    content list in a version-sensitive way. An empty anchor keeps its place unmarked, because
    Anthropic rejects an empty text block. Everything is copied on the way; caller dicts and
    lists are never mutated.
    """

    name: ClassVar[str] = "anthropic_ephemeral"

    def apply(
        self,
        system: SystemPrompt,
        tools: list[dict[str, Any]] | None,
        messages: list[dict[str, Any]],
    ) -> tuple[SystemPrompt, list[dict[str, Any]] | None, list[dict[str, Any]]]:
        """Mark the last system block and the last tool; ``messages`` pass through as a new list."""
        return self._system(system), self._tools(tools), list(messages)

    @staticmethod
    def _system(system: SystemPrompt) -> SystemPrompt:
        if system is None:
            return None
        if isinstance(system, str):
            if not system:
                return system  # an empty block is never cached
            return [{"type": "text", "text": system, "cache_control": dict(EPHEMERAL)}]
        if isinstance(system, list):
            if not system:
                return system
            return _mark_last_block(system, where="system")
        raise TypeError(
            f"system prompt must be a string, a list of content blocks or None, got {type(system).__name__}"
        )

    @staticmethod
    def _tools(tools: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        if not tools:
            return tools
        last = tools[-1]
        if not isinstance(last, dict):
            raise TypeError(f"a tool must be a dict, got {type(last).__name__}")
        # marking the last entry caches the whole tools prefix; a caller's marker is replaced, not stacked
        return [*tools[:-1], {**last, "cache_control": dict(EPHEMERAL)}]

    def apply_messages(self, wire_messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Mark the tail (``user`` / ``tool``) and the most recent other ``user`` message,
        within what is left of Anthropic's four breakpoints."""
        out = list(wire_messages)
        anchors = _anchors(out)
        if not anchors:
            return out
        # what the system message already carries (this policy's marker, and a caller's), and the
        # one ``apply`` may have put on the last tool, which this phase does not see
        budget = MAX_BREAKPOINTS - TOOLS_BREAKPOINT
        if out[0].get("role") == "system":
            budget -= _markers_in(out[0].get("content"))
        for index in anchors:
            message = out[index]
            content = message.get("content")
            if content.__class__ is str:  # the common case, marked here without two calls
                if content and budget > 0:
                    out[index] = {**message, "content": [{"type": "text", "text": content, "cache_control": dict(EPHEMERAL)}]}
                    budget -= 1
            elif not _is_empty(content):
                held = _markers_in(content)
                last = content[-1] if isinstance(content, list) else None
                extra = 0 if isinstance(last, dict) and last.get("cache_control") is not None else 1
                if budget >= held + extra:
                    out[index] = {**message, "content": _marked_content(content, index)}
                    held += extra
                budget -= held
        if budget < 0:
            raise ValueError(
                f"the request carries {MAX_BREAKPOINTS - budget} cache_control markers counting this policy's "
                f"system and tool markers; Anthropic accepts at most {MAX_BREAKPOINTS} in the whole request "
                "(remove markers from the system prompt or the messages)"
            )
        return out

    @staticmethod
    def anchors(wire_messages: Sequence[dict[str, Any]]) -> tuple[int, ...]:
        """Indices of the (at most two) anchor messages, tail first."""
        return _anchors(wire_messages)


def _anchors(wire_messages: Sequence[dict[str, Any]]) -> tuple[int, ...]:
    tail = len(wire_messages) - 1
    if tail < 0:
        return ()
    found: tuple[int, ...] = ()
    if wire_messages[tail].get("role") in _TAIL_ROLES:
        found, tail = (tail,), tail - 1
    for index in range(tail, -1, -1):
        if wire_messages[index].get("role") == "user":
            return (*found, index)
    return found


#: roles whose tail message is an anchor
_TAIL_ROLES = ("user", "tool")


def _markers_in(content: Any) -> int:
    """Blocks of a content list that carry ``cache_control`` (a string carries none)."""
    if not isinstance(content, list):
        return 0
    return sum(1 for block in content if isinstance(block, dict) and block.get("cache_control") is not None)


def _is_empty(content: Any) -> bool:
    return content is None or content == "" or content == []


def _marked_content(content: Any, index: int) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content, "cache_control": dict(EPHEMERAL)}]
    if isinstance(content, list):
        return _mark_last_block(content, where=f"message {index} content")
    raise TypeError(
        f"message {index} content must be a string or a list of content blocks, got {type(content).__name__}"
    )


def _mark_last_block(blocks: list[Any], *, where: str) -> list[Any]:
    last = blocks[-1]
    if not isinstance(last, dict):
        raise TypeError(f"{where}: the last content block must be a dict, got {type(last).__name__}")
    # replaced, not stacked: a re-run over an already-marked payload stays at one marker
    return [*blocks[:-1], {**last, "cache_control": dict(EPHEMERAL)}]
