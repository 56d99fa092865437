"""Chat-shaped kwargs become a Responses API request: input items, instructions, function tools.

The request builder does every policy step on the chat shape (the conversation model, the
reasoning codec's replay payload, sanitised tools, parameters and value rules); a plan whose
wire is ``openai-responses`` or ``xai-responses`` then has its kwargs rewritten here, once, into
what ``POST /v1/responses`` takes, so the built request (``preview``, the call journal, the
golden wire) is the request that is sent, and both transports send it: the direct transport as
the body, litellm's Responses API (``litellm.responses``) as its keyword arguments.

The mapping:

- leading system messages -> ``instructions``; a later one -> a ``system`` message item;
- user messages -> ``message`` items (text -> ``input_text``, image URLs -> ``input_image``);
- an assistant turn -> its ``message`` item (``output_text``) and one ``function_call`` item per
  tool call (``call_id``, ``name``, ``arguments``), with each replayed reasoning item (the
  ``openai_responses`` codec's payload) placed immediately before the item it preceded, which
  gets its own id back (the provider pairs them by it); a turn with reasoning and nothing else
  gets an empty assistant message to follow it;
- tool results -> ``function_call_output`` items answering their ``call_id``;
- tools -> function tools (``strict`` always said: the Responses API reads a missing one as true);
- ``tool_choice`` naming a function -> ``{type: function, name}``;
- ``max_tokens`` / ``max_completion_tokens`` -> ``max_output_tokens``;
- ``reasoning_effort`` -> ``reasoning.effort``;
- the plan's ``wire.body`` (``store: false``, ``include``) is added.

A chat key with no Responses counterpart (``seed``, ``stop``, ``n``, ``logprobs``,
``response_format``, ...) is refused with :class:`ResponsesRequestError`, naming it and what to do;
nothing is dropped silently.

A trial turn sends the whole history again, and converting it is most of what a build costs on
this route (about 10 µs a message: 3 ms of a 3.5 ms build at 300 messages, measured by
``benchmarks/trial_loop.py``'s turn-cost rows). A message's items depend on nothing but the message
(where it stands only decides whether a leading system message is ``instructions``), and the
request builder hands over the same wire message dicts, read-only, for every build of one
conversation (``capplan.executor.message_convert.ConversationCache``), so
:class:`InputItemMemo` keeps each wire message's items by the message dict's identity and a build
converts only the messages it has not seen. The items are then shared by the requests built from
them, read-only under the same contract as the wire messages. The output is the same, to the byte,
with or without it (``tests/executor/test_responses_item_memo.py``).
"""

from __future__ import annotations

import copy
import json
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from capplan.core.recent_entries import remember
from capplan.executor.errors import ExecutorError
from capplan.executor.policies.reasoning_codec.openai_responses import REPLAY_KEY

#: kwargs that steer the call (the transport's), passed through unchanged
PASS_THROUGH = frozenset({
    "model", "api_base", "api_key", "custom_llm_provider", "max_retries", "num_retries", "timeout",
    "extra_headers", "extra_body", "allowed_openai_params",
    # Responses parameters a plan or caller may already give in their own names
    "temperature", "top_p", "parallel_tool_calls", "store", "include", "metadata", "user", "service_tier",
    "prompt_cache_key", "truncation", "text", "instructions", "previous_response_id",
})

#: chat keys with no Responses counterpart, and what to do instead
_NO_COUNTERPART = {
    "seed": "the Responses API has no seed; set `supports_seed: false` for the model (Responses plans compile it so)",
    "stop": "the Responses API has no stop sequences",
    "n": "the Responses API returns one answer per request",
    "logprobs": "request logprobs through `include` on the Responses API",
    "top_logprobs": "request logprobs through `include` on the Responses API",
    "response_format": "the Responses API takes a structured output format under `text.format`",
    "frequency_penalty": "the Responses API has no frequency_penalty",
    "presence_penalty": "the Responses API has no presence_penalty",
    "thinking": "the Responses API takes `reasoning: {effort}`, not a thinking budget; use reasoning mode adaptive",
    "reasoning": "the request already says `reasoning_effort`; give one of them",
}


class ResponsesRequestError(ExecutorError, ValueError):
    """A request a Responses plan cannot express on its wire (a chat-only field or content part)."""

    code = "RESPONSES_REQUEST"


#: wire messages whose items an :class:`InputItemMemo` keeps: every message of a few dozen
#: concurrent conversations of a few hundred messages each
ITEM_MEMO_SIZE = 8192


class InputItemMemo:
    """The input items of recent wire messages, by the identity of the message dict.

    An entry keeps its message dict (so its id cannot be reused while the entry lives) and the
    items converted from it; a lookup is used only when the entry's dict *is* the message. The
    dicts are read-only by contract (the request builder's wire messages), which is what makes
    their items safe to keep; a message rebuilt per request is a new object and is converted
    again. The least recently used entries go first, so the messages of live conversations stay
    while those of finished ones are dropped. Thread-safe without a lock, as ``ConversationCache``
    is: each ``OrderedDict`` call is atomic, and a race costs at worst a second conversion.
    """

    def __init__(self, size: int = ITEM_MEMO_SIZE) -> None:
        self._size = size
        self._entries: OrderedDict[int, tuple[Mapping[str, Any], list[dict[str, Any]]]] = OrderedDict()

    def items(self, message: Mapping[str, Any], index: int) -> list[dict[str, Any]]:
        """``message_items(message, index)``, converted once per message dict (the list is shared: read it)."""
        key = id(message)
        entry = self._entries.get(key)
        if entry is not None and entry[0] is message:
            try:
                self._entries.move_to_end(key)
            except KeyError:  # dropped by another thread meanwhile; the items are still right
                pass
            return entry[1]
        items = message_items(message, index)
        remember(self._entries, key, (message, items), self._size)
        return items


def responses_kwargs(kwargs: Mapping[str, Any], wire_body: Mapping[str, Any],
                     memo: InputItemMemo | None = None) -> dict[str, Any]:
    """``kwargs`` (the chat shape the request builder made) as Responses API kwargs.

    With ``memo``, each message's items come from it (the same bytes, converted once per message dict).
    """
    out: dict[str, Any] = {}
    effort: Any = None
    for key, value in kwargs.items():
        if key == "messages":
            instructions, items = input_items(value, memo)
            if instructions is not None:
                out["instructions"] = instructions
            out["input"] = items
        elif key == "tools":
            out["tools"] = [function_tool(tool, index) for index, tool in enumerate(value)]
        elif key == "tool_choice":
            out["tool_choice"] = _tool_choice(value)
        elif key in ("max_tokens", "max_completion_tokens"):
            out["max_output_tokens"] = value
        elif key == "reasoning_effort":
            effort = value
        elif key in PASS_THROUGH:
            out[key] = value
        else:
            why = _NO_COUNTERPART.get(key, "it is a chat completions parameter the Responses API does not take")
            raise ResponsesRequestError(
                f"request field {key!r} cannot be sent on a Responses route: {why}. Remove it from the request, or "
                "send the model on chat completions (an overlay's `responses_api: {routes: []}` for its preset)")
    for key, value in wire_body.items():
        if key == "reasoning" and isinstance(value, Mapping):
            continue
        out.setdefault(key, copy.deepcopy(value))
    reasoning = dict(wire_body.get("reasoning") or {}) if isinstance(wire_body.get("reasoning"), Mapping) else {}
    if effort is not None:
        reasoning["effort"] = effort
    if reasoning:
        out["reasoning"] = reasoning
    return out


def input_items(messages: Sequence[Mapping[str, Any]],
                memo: InputItemMemo | None = None) -> tuple[str | None, list[dict[str, Any]]]:
    """The leading system text as ``instructions``, and every other message as input items."""
    instructions: list[str] = []
    items: list[dict[str, Any]] = []
    convert = memo.items if memo is not None else message_items
    leading = True
    for index, message in enumerate(messages):
        if leading:
            if message.get("role") == "system":
                instructions.append(_text_of(message.get("content"), index))
                continue
            leading = False
        items += convert(message, index)
    return ("\n\n".join(instructions) if instructions else None), items


def message_items(message: Mapping[str, Any], index: int) -> list[dict[str, Any]]:
    """The input items of one wire message past the leading system messages (``index``: where it stands, for errors)."""
    role = message.get("role")
    if role in ("system", "developer", "user"):
        return [{"type": "message", "role": role, "content": _input_content(message.get("content"), index)}]
    if role == "assistant":
        return _assistant_items(message, index)
    if role == "tool":
        return [{"type": "function_call_output", "call_id": str(message.get("tool_call_id") or ""),
                 "output": _tool_output(message.get("content"), index)}]
    raise ResponsesRequestError(f"messages[{index}]: role {role!r} has no Responses input item")


def function_tool(tool: Mapping[str, Any], index: int) -> dict[str, Any]:
    """A chat tool (``{type: function, function: {...}}``) as a Responses function tool."""
    function = tool.get("function")
    if tool.get("type") != "function" or not isinstance(function, Mapping):
        raise ResponsesRequestError(f"tools[{index}]: only function tools can be sent on a Responses route")
    out: dict[str, Any] = {"type": "function", "name": function.get("name")}
    if function.get("description") is not None:
        out["description"] = function["description"]
    out["parameters"] = function.get("parameters") if function.get("parameters") is not None else {
        "type": "object", "properties": {}}
    # the Responses API takes a function without `strict` as strict; chat completions as not
    out["strict"] = bool(function.get("strict", False))
    return out


def _tool_choice(choice: Any) -> Any:
    if isinstance(choice, Mapping) and choice.get("type") == "function" and isinstance(choice.get("function"), Mapping):
        return {"type": "function", "name": choice["function"].get("name")}
    return choice


def _assistant_items(message: Mapping[str, Any], index: int) -> list[dict[str, Any]]:
    """One assistant turn: its text and calls, each replayed reasoning item right before its follower."""
    turn: list[dict[str, Any]] = []
    content = message.get("content")
    text = _text_of(content, index) if content else ""
    if text:
        turn.append({"type": "message", "role": "assistant",
                     "content": [{"type": "output_text", "text": text, "annotations": []}]})
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        turn.append({"type": "function_call", "call_id": str(call.get("id") or ""), "name": function.get("name"),
                     "arguments": function.get("arguments") if isinstance(function.get("arguments"), str)
                     else _json(function.get("arguments"))})
    entries = message.get(REPLAY_KEY) or ()
    if not entries:
        return turn
    if not turn:
        # a reasoning item must be followed by an item: a turn that only reasoned gets an empty reply
        turn.append({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "",
                                                                            "annotations": []}]})
    placed: list[list[dict[str, Any]]] = [[] for _ in turn]
    for entry in entries:
        target = _follower_index(turn, entry.get("follower"))
        follower = entry.get("follower") or {}
        if isinstance(follower.get("id"), str) and _matches(turn[target], follower):
            # the provider pairs a reasoning item with the item it preceded by that item's id
            turn[target] = {**turn[target], "id": follower["id"]}
        placed[target].append(copy.deepcopy(entry["item"]))
    out: list[dict[str, Any]] = []
    for reasoning, item in zip(placed, turn):
        out += reasoning
        out.append(item)
    return out


def _follower_index(turn: list[dict[str, Any]], follower: Any) -> int:
    if isinstance(follower, Mapping):
        for position, item in enumerate(turn):
            if _matches(item, follower):
                return position
    return 0


def _matches(item: Mapping[str, Any], follower: Mapping[str, Any]) -> bool:
    if item.get("type") != follower.get("type"):
        return False
    if item["type"] == "function_call":
        return item.get("call_id") == follower.get("call_id")
    return True


def _text_of(content: Any, index: int) -> str:
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, Mapping) and part.get("type") == "text":
                texts.append(str(part.get("text", "")))
            else:
                kind = part.get("type") if isinstance(part, Mapping) else type(part).__name__
                raise ResponsesRequestError(f"messages[{index}]: a {kind!r} part cannot stand in this message on a "
                                            "Responses route (only text)")
        return "".join(texts)
    raise ResponsesRequestError(f"messages[{index}]: content of type {type(content).__name__} is not text")


def _input_content(content: Any, index: int) -> Any:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise ResponsesRequestError(f"messages[{index}]: content of type {type(content).__name__} is not text or parts")
    return [_input_part(part, index) for part in content]


def _input_part(part: Any, index: int) -> dict[str, Any]:
    kind = part.get("type") if isinstance(part, Mapping) else None
    if kind == "text":
        return {"type": "input_text", "text": str(part.get("text", ""))}
    if kind == "image_url":
        image = part.get("image_url")
        url = image.get("url") if isinstance(image, Mapping) else image
        out = {"type": "input_image", "image_url": url}
        detail = image.get("detail") if isinstance(image, Mapping) else None
        out["detail"] = detail if isinstance(detail, str) else "auto"
        return out
    raise ResponsesRequestError(f"messages[{index}]: a {kind!r} content part has no Responses input counterpart "
                                "(text and image_url do)")


def _tool_output(content: Any, index: int) -> Any:
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, list):
        return [_input_part(part, index) for part in content]
    raise ResponsesRequestError(f"messages[{index}]: tool result of type {type(content).__name__} is not text or parts")


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
