"""The simulated user's own tool loop (dual control): the user acts on their own world before they answer.

A task may give its user tools (τ²-bench's telecom user has a phone). Then one user turn is a
small loop of its own: the simulator's generation either calls the user's tools -- each call
runs through ``run_tool`` (the caller's: it executes, bounds and records the call, and returns
the text the user reads) and the results go back to the simulator -- or answers in words, which
is the turn the agent reads. The loop is bounded by ``max_steps`` tool-calling generations per
turn; past it the turn is refused (:class:`UserToolStepsExceeded`, a harness error, never the
agent's).

The exchanges are the user's alone: they never enter the shared transcript. The simulator keeps
them by the message index of the turn they preceded and replays them in its own later requests
(its history holds what it did, as τ²'s user simulator's does), before the words of that turn.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from capplan.trials.usersim.contract import Message
from capplan.trials.usersim.request import dialogue_text

#: One user tool call run by the caller: ``(name, arguments, call id, message index of the turn it precedes)
#: -> the text the user reads``.
RunTool = Callable[[str, dict[str, Any], str, int], str]


class UserToolStepsExceeded(RuntimeError):
    """The simulator kept calling its tools past ``max_steps`` generations in one turn."""


@dataclass(frozen=True)
class UserTools:
    """What a simulator with tools of its own is given: the schemas it is offered, how a call runs, the step bound."""

    schemas: Sequence[Mapping[str, Any]]
    run: RunTool
    max_steps: int


@dataclass(frozen=True)
class CallRequest:
    """One tool call the simulator asked for (read from its generation)."""

    id: str
    name: str
    arguments: dict[str, Any]


def requested_calls(generation: Any) -> list[CallRequest]:
    """The tool calls a generation carries (``tool_calls`` with ``name``, ``arguments``, ``id``), if any.

    Only an object that carries them is read: the simulator's contract is ``text``, and a
    generation without ``tool_calls`` (a scripted callable's) is a words-only answer.
    """
    calls = getattr(generation, "tool_calls", None) or ()
    found: list[CallRequest] = []
    for call in calls:
        arguments = getattr(call, "arguments", None)
        found.append(CallRequest(id=str(getattr(call, "id", "") or ""), name=str(getattr(call, "name", "")),
                                 arguments=dict(arguments) if isinstance(arguments, Mapping) else {}))
    return found


def exchange(calls: Sequence[CallRequest], ids: Sequence[str], results: Sequence[str],
             text: str | None) -> list[Message]:
    """One step as the simulator's own history holds it: its call message (from its seat, role ``assistant``),
    then one ``tool`` result per call, ids as the caller numbered them."""
    message: Message = {"role": "assistant", "content": text or None, "tool_calls": [
        {"id": call_id, "type": "function",
         "function": {"name": call.name, "arguments": json.dumps(call.arguments, ensure_ascii=False)}}
        for call, call_id in zip(calls, ids)]}
    return [message, *({"role": "tool", "tool_call_id": call_id, "content": result}
                       for call_id, result in zip(ids, results))]


def own_request(transcript: Sequence[Mapping[str, Any]], exchanges: Mapping[int, Sequence[Message]], *,
                greeting: str, current: Sequence[Message] = ()) -> list[Message]:
    """The simulator's request with its own tool exchanges in place: each kept under message index ``i``
    right before its words of ``transcript[i]``, this turn's (``current``) at the end.

    The shared turns are flipped as :func:`~capplan.trials.usersim.request.flip_transcript` flips
    them (roles swapped, dialogue only, adjacent same-role turns joined), except that an exchange
    is never joined into: the words after it stay a message of their own. The greeting leads when
    the request would otherwise start on the simulator's own side.
    """
    out: list[Message] = []
    for index, message in enumerate(transcript):
        if index in exchanges:
            out.extend(dict(m) for m in exchanges[index])
        role = message.get("role")
        if role not in _FLIPPED:
            continue
        text = dialogue_text(message, index=index)
        if text is None:
            continue
        new_role = _FLIPPED[str(role)]
        last = out[-1] if out else None
        if last is not None and last["role"] == new_role and not last.get("tool_calls"):
            last["content"] = f"{last['content']}\n\n{text}"
        else:
            out.append({"role": new_role, "content": text})
    out.extend(dict(m) for m in current)
    if not out or out[0]["role"] != "user":
        out.insert(0, {"role": "user", "content": greeting})
    return out


_FLIPPED = {"user": "assistant", "assistant": "user"}
