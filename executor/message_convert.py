"""Request messages become wire messages: the OpenAI-style list litellm receives.

Three policies act here and nowhere else: the reasoning codec's replay payload is spliced onto
every assistant message that carries reasoning, the message-assembly policy decides what an
empty tool-call turn says, and the content policy renders each tool result.

A message's wire form depends only on the message and the plan's policies, never on its place in
the conversation, so each message is converted once: ``ConversationCache`` keeps the wire list of
the latest request of each conversation, and a request whose history extends it (the same message
objects, then new ones) converts only the new messages.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any, NamedTuple

from executor.messages import AssistantMessage, Message, ToolMessage, UserMessage
from executor.policies.reasoning_codec import split_replayable
from executor.policy_set import PolicySet
from executor.reasoning import ReasoningLeftOut


class MessageConverter:
    """Converts request messages for one plan's policies.

    ``openrouter`` says which transport the plan uses, so the codec replays reasoning in the
    envelope that route reads (see ``ReasoningCodec.for_route``).
    """

    def __init__(self, policies: PolicySet, *, openrouter: bool = False) -> None:
        self.codec = policies.reasoning_codec.for_route(openrouter=openrouter)
        self.assembly = policies.message_assembly_policy
        self.content = policies.content_policy

    def message(self, msg: Message) -> dict[str, Any]:
        """The wire form of one message."""
        if isinstance(msg, UserMessage):
            content = msg.content
            if isinstance(content, str):
                return {"role": "user", "content": content}
            # the request model spells unset optional keys as null; the wire omits them
            return {"role": "user", "content": [part.model_dump(mode="json", exclude_none=True) for part in content]}
        if isinstance(msg, AssistantMessage):
            return self._assistant(msg)
        if isinstance(msg, ToolMessage):
            images = [image.model_dump(mode="json") for image in msg.images]
            rendered = self.content.render_tool_result(msg.content, images)
            return {"role": "tool", "tool_call_id": msg.tool_call_id, "content": rendered}
        raise ValueError(f"unknown message type {type(msg).__name__}")

    def _assistant(self, msg: AssistantMessage) -> dict[str, Any]:
        calls = msg.tool_calls
        content = self.assembly.assistant_content(msg.content, has_tool_calls=bool(calls))
        out: dict[str, Any] = {"role": "assistant", "content": content or ""}
        if calls:
            out["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.function.name, "arguments": _arguments(call.function.arguments)},
                }
                for call in calls
            ]
        if msg.reasoning is not None:
            kept, _ = split_replayable(self.codec, msg.reasoning.to_structured())
            payload = self.codec.encode_for_replay(kept)
            if payload:
                out.update(payload)
        return out

    def left_out(self, messages: list[Message], start: int = 0) -> tuple[ReasoningLeftOut, ...]:
        """Every history reasoning block this plan's codec does not replay, with the reason
        (``messages`` sit at positions ``start``, ``start + 1``, ... of the conversation)."""
        records: list[ReasoningLeftOut] = []
        for index, msg in enumerate(messages, start):
            if isinstance(msg, AssistantMessage) and msg.reasoning is not None and msg.reasoning.blocks:
                _, left = split_replayable(self.codec, msg.reasoning.to_structured())
                records += [ReasoningLeftOut(index, block_index, block.type, reason)
                            for block_index, block, reason in left]
        return tuple(records)


def _arguments(arguments: str | dict[str, Any]) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


class ConversationCache:
    """The wire messages of recent requests, so a growing history is converted once per message.

    An entry is keyed by the id of the last message it was converted from and keeps that message
    list (which also keeps its objects, and so their ids, alive) with the wire list. A new request
    looks for an entry ending at one of its own last ``lookback`` messages: a trial turn adds a
    few messages to the previous turn's list, so the entry is found in as many lookups as there
    are new messages. The entry is reused only when the request's messages start with exactly its
    list; the comparison runs in C and stops at identity for every shared object. Cached wire
    dicts are shared by the requests built from them and are read-only by contract (the client
    copies before sending).
    """

    def __init__(self, converter: MessageConverter, *, size: int = 256, lookback: int = 64) -> None:
        self._converter = converter
        self._size = size
        self._lookback = lookback
        self._entries: OrderedDict[int, _Converted] = OrderedDict()
        self._lock = threading.Lock()

    def wire(self, messages: list[Message]) -> tuple[list[dict[str, Any]], tuple[ReasoningLeftOut, ...]]:
        """The wire form of ``messages`` (a new list; its dicts may be shared with earlier builds),
        and the history reasoning the codec leaves out."""
        done = self._longest_prefix(messages)
        new = messages[len(done.messages) :]
        wire = done.wire + list(map(self._converter.message, new))
        left_out = done.left_out + self._converter.left_out(new, len(done.messages))
        if messages:
            with self._lock:
                key = id(messages[-1])
                self._entries[key] = _Converted(list(messages), wire, left_out)
                self._entries.move_to_end(key)
                while len(self._entries) > self._size:
                    self._entries.popitem(last=False)
        return list(wire), left_out

    def _longest_prefix(self, messages: list[Message]) -> _Converted:
        last = len(messages) - 1
        with self._lock:
            for end in range(last, max(-1, last - self._lookback), -1):
                entry = self._entries.get(id(messages[end]))
                if entry is not None and len(entry.messages) == end + 1:
                    break
            else:
                return _NOTHING
        return entry if messages[: end + 1] == entry.messages else _NOTHING


class _Converted(NamedTuple):
    """One request's messages and what they became."""

    messages: list[Message]
    wire: list[dict[str, Any]]
    left_out: tuple[ReasoningLeftOut, ...]


_NOTHING = _Converted([], [], ())
