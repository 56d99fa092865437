"""Request messages become wire messages: the OpenAI-style list litellm receives.

Three policies act here and nowhere else: the reasoning codec's replay payload is spliced onto
every assistant message that carries reasoning (or, for a codec whose ``replay_scope`` is
``in_loop``, onto every assistant step of the current tool loop: those since the last user
message), the message-assembly policy decides what an empty tool-call turn says, and the content
policy renders each tool result.

A message's wire form depends only on the message and the plan's policies, never on its place in
the conversation, so each message is converted once: ``ConversationCache`` keeps the wire list of
the latest request of each conversation, and a request whose history extends it (the same message
objects, then new ones) converts only the new messages.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any, NamedTuple

from capplan.core.recent_entries import remember
from capplan.core.reference_mode import reference_mode
from capplan.executor.messages import AssistantMessage, Message, ToolMessage, UserMessage
from capplan.executor.policies.content_policy import AnthropicContent, TextOnlyContent
from capplan.executor.policies.message_assembly_policy import MessageAssemblyPolicy
from capplan.executor.policies.reasoning_codec import left_signatures, split_replayable
from capplan.executor.policy_set import PolicySet
from capplan.executor.reasoning import ReasoningLeftOut, ReasoningOrigin


class MessageConverter:
    """Converts request messages for one plan's policies.

    ``openrouter`` says which transport the plan uses, so the codec replays reasoning in the
    envelope that route reads (see ``ReasoningCodec.for_route``). ``origin`` is where the plan's
    requests go: an origin-bound block recorded with another origin is not replayed as it stands
    (see ``split_replayable``). A request with reasoning off to a model that thinks only when
    asked replays no history reasoning: ``_assistant``, ``replay_payload`` and ``left_out`` take
    the reason as ``reasoning_off`` (the request builder applies it to a cached conversion).
    """

    def __init__(self, policies: PolicySet, *, openrouter: bool = False, origin: ReasoningOrigin | None = None) -> None:
        self.codec = policies.reasoning_codec.for_route(openrouter=openrouter)
        self.origin = origin
        self.assembly = policies.message_assembly_policy
        self.content = policies.content_policy
        # Policies are stateless, so two answers are known before any message: the base
        # assistant_content leaves content alone when the policy injects no filler, and the
        # built-in tool-result renderings of a result without images are its text. Skipping
        # those calls changes nothing a message goes on the wire as.
        assembly = type(self.assembly).assistant_content
        self._content_as_is = (
            assembly is MessageAssemblyPolicy.assistant_content and not self.assembly.inject_empty_assistant_filler
        )
        render = type(self.content).render_tool_result
        self._text_as_is = render in _TEXT_WHEN_NO_IMAGES

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
            if not msg.images and self._text_as_is:
                return {"role": "tool", "tool_call_id": msg.tool_call_id, "content": msg.content}
            images = [image.model_dump(mode="json") for image in msg.images]
            rendered = self.content.render_tool_result(msg.content, images)
            return {"role": "tool", "tool_call_id": msg.tool_call_id, "content": rendered}
        raise ValueError(f"unknown message type {type(msg).__name__}")

    def _assistant(self, msg: AssistantMessage, reasoning_off: str | None = None) -> dict[str, Any]:
        calls = msg.tool_calls
        content = msg.content if self._content_as_is else self.assembly.assistant_content(
            msg.content, has_tool_calls=bool(calls)
        )
        out: dict[str, Any] = {"role": "assistant", "content": content or ""}
        if calls:
            wire_calls: list[dict[str, Any]] = []
            for call in calls:
                function = call.function
                arguments = function.arguments
                if arguments.__class__ is not str:
                    arguments = _arguments(arguments)
                wire_calls.append({"id": call.id, "type": "function", "function": {"name": function.name, "arguments": arguments}})
            out["tool_calls"] = wire_calls
        # an in_loop codec's payload depends on the message's place: ConversationCache adds it
        if msg.reasoning is not None and self.codec.replay_scope != "in_loop":
            out.update(self.replay_payload(msg, reasoning_off))
        return out

    def replay_payload(self, msg: AssistantMessage, reasoning_off: str | None = None) -> dict[str, Any]:
        """The keys that replay ``msg``'s reasoning (``{}`` when nothing of it is replayable)."""
        if msg.reasoning is None:
            return {}
        kept, _ = split_replayable(self.codec, msg.reasoning.to_structured(), target=self.origin,
                                   reasoning_off=reasoning_off)
        return self.codec.encode_for_replay(kept)

    def left_out(self, messages: list[Message], start: int = 0,
                 reasoning_off: str | None = None) -> tuple[ReasoningLeftOut, ...]:
        """Every history reasoning block this plan's codec does not replay, with the reason
        (``messages`` sit at positions ``start``, ``start + 1``, ... of the conversation);
        message-level signatures left out are recorded with type ``signature``."""
        records: list[ReasoningLeftOut] = []
        for index, msg in enumerate(messages, start):
            if isinstance(msg, AssistantMessage) and msg.reasoning is not None and (
                    msg.reasoning.blocks or msg.reasoning.signatures):
                reasoning = msg.reasoning.to_structured()
                _, left = split_replayable(self.codec, reasoning, target=self.origin, reasoning_off=reasoning_off)
                records += [ReasoningLeftOut(index, block_index, block.type, reason)
                            for block_index, block, reason in left]
                records += [ReasoningLeftOut(index, signature_index, "signature", reason) for signature_index, reason
                            in left_signatures(reasoning, target=self.origin, reasoning_off=reasoning_off)]
                if self.codec.replay_scope == "in_loop":
                    # position-free: every turn is left out until ConversationCache finds the
                    # current tool loop of a request and replays its steps (see in_loop_turns)
                    skipped = {block_index for block_index, _, _ in left}
                    records += [ReasoningLeftOut(index, block_index, block.type, IN_LOOP_ONLY)
                                for block_index, block in enumerate(msg.reasoning.blocks)
                                if block_index not in skipped]
        return tuple(records)

    def in_loop_payload(self, msg: AssistantMessage, converted: dict[str, Any]) -> dict[str, Any] | None:
        """``converted`` (the step's wire form without reasoning) with its reasoning replayed, or
        ``None`` when nothing of it is replayable (the step then goes as converted)."""
        payload = self.replay_payload(msg)
        return {**converted, **payload} if payload else None


#: why an earlier turn's reasoning is not replayed under an in_loop codec
IN_LOOP_ONLY = "replayed only within the current tool loop, the steps since the last user message (replay: in_loop)"


def in_loop_turns(messages: list[Message]) -> list[int]:
    """The indices of the current tool loop's assistant steps that carry reasoning, oldest first.

    The current tool loop is everything after the last user message: every assistant step there
    (each tool-call turn and any text it wrote on the way) belongs to the request's own turn, and
    a template that keeps reasoning "for the current turn" renders all of them (Qwen3, GLM-4.6,
    Kimi-K2-Thinking and MiniMax-M2 key on the last user message, not on the last assistant one).
    A request that ends in a user message starts a new turn, so its loop has no steps yet.
    """
    found: list[int] = []
    for index in range(len(messages) - 1, -1, -1):
        msg = messages[index]
        if isinstance(msg, UserMessage):
            break
        if isinstance(msg, AssistantMessage) and msg.reasoning is not None and msg.reasoning.blocks:
            found.append(index)
    found.reverse()
    return found


#: renderings whose result for a tool result without images is its text, unchanged
_TEXT_WHEN_NO_IMAGES = (TextOnlyContent.render_tool_result, AnthropicContent.render_tool_result)


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

    def wire(self, messages: list[Message]) -> tuple[list[dict[str, Any]], tuple[ReasoningLeftOut, ...]]:
        """The wire form of ``messages`` and the history reasoning the codec leaves out.

        The list is the cache's own (shared with later builds of the same conversation): read it,
        copy it before adding to it.
        """
        count = len(messages)
        entries = self._entries
        done = _NOTHING
        # reads take no lock: each dict lookup is atomic, and a hit is only used once the
        # request's own messages are shown to start with the entry's list. A conversation seen
        # for the first time is told in one C-level pass over its last message ids.
        if not entries.keys().isdisjoint(map(id, messages[-self._lookback :])):
            get = entries.get
            for end in range(count - 1, max(-1, count - 1 - self._lookback), -1):
                entry = get(id(messages[end]))
                if entry is not None and len(entry.messages) == end + 1:
                    if messages[: end + 1] == entry.messages:
                        done = entry
                    break
        start = len(done.messages)
        if start == count and count:
            converted = done
        else:
            new = messages[start:] if start else messages
            wire = list(map(self._converter.message, new))
            left_out = done.left_out
            for index, msg in enumerate(new, start):
                # signatures alone (Gemini's) can be left out too: they are bound to their origin
                if isinstance(msg, AssistantMessage) and msg.reasoning is not None and (
                        msg.reasoning.blocks or msg.reasoning.signatures):
                    left_out += self._converter.left_out([msg], index)
            # tuple.__new__: the NamedTuple's own constructor is a Python-level call (the reference mode calls it)
            whole = done.wire + wire if start else wire
            converted = (_Converted(messages[:], whole, left_out, {}) if reference_mode()
                         else tuple.__new__(_Converted, (messages[:], whole, left_out, {})))
        if count:
            remember(entries, id(messages[-1]), converted, self._size)  # no lock (see capplan.core.recent_entries)
        if self._converter.codec.replay_scope == "in_loop":
            return self._place_in_loop(messages, converted, done)
        return converted.wire, converted.left_out

    def _place_in_loop(self, messages: list[Message], converted: _Converted,
                       done: _Converted) -> tuple[list[dict[str, Any]], tuple[ReasoningLeftOut, ...]]:
        """For an ``in_loop`` codec: the request with every step of its current tool loop replayed.

        ``converted.wire`` is shared with the cache, so a request with a loop to replay is a new
        list with new dicts for those steps only; every other turn stays as converted (without
        reasoning). A step's replayed dict is made once and kept on the entry: the next request of
        the same loop (an entry that extends this one) reuses it, so each step is still converted once.
        """
        turns = in_loop_turns(messages)
        if not turns:
            return converted.wire, converted.left_out
        placed = converted.placed
        earlier = done.placed
        wire = list(converted.wire)
        replayed: set[int] = set()
        for index in turns:
            if index in placed:
                step = placed[index]
            elif index in earlier:
                step = placed[index] = earlier[index]
            else:
                msg = messages[index]
                assert isinstance(msg, AssistantMessage)
                step = placed[index] = self._converter.in_loop_payload(msg, converted.wire[index])
            if step is not None:
                wire[index] = step
                replayed.add(index)
        if not replayed:
            return converted.wire, converted.left_out
        return wire, tuple(r for r in converted.left_out if not (r.message in replayed and r.reason == IN_LOOP_ONLY))


class _Converted(NamedTuple):
    """One request's messages and what they became.

    ``placed`` is an in_loop codec's replayed steps by message index (``None``: nothing of that
    step is replayable), filled as requests of the entry's tool loop are built.
    """

    messages: list[Message]
    wire: list[dict[str, Any]]
    left_out: tuple[ReasoningLeftOut, ...]
    placed: dict[int, dict[str, Any] | None]


_NOTHING = _Converted([], [], (), {})
