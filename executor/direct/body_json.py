"""A request body's JSON, with the message history encoded once per message, not once per turn.

The history is the chat body's ``messages`` or the Responses body's ``input`` (whose items the
request builder keeps per wire message, read-only, :class:`capplan.executor.responses_request.InputItemMemo`,
so a turn's list starts with the very item objects of the turn before).

A trial turn sends the whole history again: at 300 messages, encoding it is most of what the
direct transport spends on the turn, although all but the last few messages were encoded, to the
same text, by the turn before. :class:`MessageListEncoder` remembers the text of recent message
lists by the identity of their last message, as :class:`capplan.executor.message_convert.ConversationCache`
remembers their wire form: a request whose list starts with exactly (by identity) the objects of a
remembered one reuses that text and encodes only the messages after it. The wire dicts the cache
hands out are read-only by contract, which is what makes their text safe to keep; a message
rebuilt per request (a renamed system role, a rewritten tool message) is a new object and is
encoded again.

:func:`body_bytes` writes exactly the bytes ``json.dumps(body, ensure_ascii=False,
separators=(",", ":"))`` writes (``tests/executor/test_body_json.py``); in the reference mode
(:mod:`capplan.core.reference_mode`) it is that call.
"""

from __future__ import annotations

import json
import operator
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, NamedTuple

from capplan.core.recent_entries import remember
from capplan.core.reference_mode import reference_mode

_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

#: body keys whose list value is a conversation's history: chat completions', the Responses API's
HISTORY_KEYS = frozenset({"messages", "input"})


class _Encoded(NamedTuple):
    messages: tuple[Any, ...]  # the list the text is of (its objects, and so their ids, stay alive)
    text: str  # the items' JSON joined by "," (no brackets)


class MessageListEncoder:
    """JSON text of message lists, each extended from the text of a remembered list it starts with.

    Thread-safe without a lock, as ``ConversationCache`` is: every dict operation is atomic, and a
    remembered entry is used only once the list is shown to start with its very objects; races
    cost at worst an extra encoding.
    """

    def __init__(self, *, size: int = 128, lookback: int = 64) -> None:
        self._size = size
        self._lookback = lookback
        self._entries: OrderedDict[int, _Encoded] = OrderedDict()

    def encode(self, messages: list[Any]) -> str:
        """``json.dumps(messages, ensure_ascii=False, separators=(",", ":"))``."""
        count = len(messages)
        if not count:
            return "[]"
        entries = self._entries
        done: _Encoded | None = None
        if not entries.keys().isdisjoint(map(id, messages[-self._lookback:])):
            get = entries.get
            for end in range(count - 1, max(-1, count - 1 - self._lookback), -1):
                entry = get(id(messages[end]))
                if entry is not None and len(entry.messages) == end + 1:
                    # identity, not equality: equal dicts may hold their keys in another order
                    if all(map(operator.is_, entry.messages, messages)):
                        done = entry
                    break
        if done is not None and len(done.messages) == count:
            return "[" + done.text + "]"
        start = len(done.messages) if done is not None else 0
        new = ",".join(map(_encode, messages[start:]))
        text = f"{done.text},{new}" if done is not None else new
        if done is not None:
            # the conversation moved on: its shorter text is not asked for again (a retry
            # resends this list, which is remembered below)
            entries.pop(id(done.messages[-1]), None)
        remember(entries, id(messages[-1]), _Encoded(tuple(messages), text), self._size)
        return "[" + text + "]"


def body_bytes(body: Mapping[str, Any], encoder: MessageListEncoder | None) -> bytes:
    """``body`` as JSON bytes, its history list (``messages`` or ``input``) through ``encoder``."""
    if encoder is None or reference_mode() or not all(type(key) is str for key in body) or not any(
            type(body.get(key)) is list for key in HISTORY_KEYS):
        return _encode(body).encode("utf-8")
    parts = [f"{_encode(key)}:{encoder.encode(value) if key in HISTORY_KEYS and type(value) is list else _encode(value)}"
             for key, value in body.items()]
    return ("{" + ",".join(parts) + "}").encode("utf-8")
