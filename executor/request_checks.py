"""Whole-conversation checks on a request file, each problem located by its JSON path.

A provider refuses (or, worse, silently misreads) a history whose tool calls and tool results
do not pair up. These checks run on request files before anything is built; the trial loop
builds its own histories and pairs them by construction, so it does not pay for them.

They read the request file's JSON document once :class:`~capplan.executor.messages.ChatRequest`
has accepted it, so every key they look at is there and of its type; reading the document and
not the model keeps this module below the one that defines the request (which runs them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from capplan.core.input_limits import InputLimitError
from capplan.core.strict_json import StrictJSONError, loads_strict

Loc = tuple[str | int, ...]


def conversation_problems(request: Mapping[str, Any]) -> list[tuple[Loc, str]]:
    """Every pairing, id, tool-name and argument problem, in message order.

    ``request`` is a request document that validated as a ``ChatRequest``.
    """
    declared = {t["function"]["name"] for t in request.get("tools", ())}
    out: list[tuple[Loc, str]] = []
    made: dict[str, Loc] = {}  # call id -> where it was made
    answered: set[str] = set()
    pending: dict[str, Loc] = {}  # calls of the latest assistant turn not yet answered
    for i, msg in enumerate(request["messages"]):
        if msg["role"] == "tool":
            call_id = msg["tool_call_id"]
            loc: Loc = ("messages", i, "tool_call_id")
            if call_id in answered:
                out.append((loc, f"tool_call_id {call_id!r} is answered twice; each call has exactly one result"))
            elif call_id in made and call_id not in pending:
                out.append((loc, f"tool_call_id {call_id!r} answers a call made before the latest assistant turn"))
            answered.add(call_id)
            pending.pop(call_id, None)
            continue
        out += _unanswered(pending)
        pending = {}
        if msg["role"] != "assistant":
            continue
        for j, call in enumerate(msg.get("tool_calls", ())):
            cloc: Loc = ("messages", i, "tool_calls", j)
            call_id, function = call["id"], call["function"]
            if call_id in made:
                out.append(((*cloc, "id"), f"tool call id {call_id!r} is used twice (first at {_dotted(made[call_id])})"))
            else:
                made[call_id] = cloc
                pending[call_id] = cloc
            if function["name"] not in declared:
                out.append(((*cloc, "function", "name"),
                            f"calls {function['name']!r}, which the request's tools do not declare"
                            + (f"; declared: {', '.join(sorted(declared))}" if declared else "")))
            problem = _arguments_problem(function["arguments"])
            if problem:
                out.append(((*cloc, "function", "arguments"), problem))
    out += _unanswered(pending)
    return out


def _unanswered(pending: dict[str, Loc]) -> list[tuple[Loc, str]]:
    return [((*loc, "id"), f"tool call {call_id!r} has no tool result; answer it with a "
             f'{{"role": "tool", "tool_call_id": "{call_id}", …}} message right after its turn')
            for call_id, loc in pending.items()]


def _arguments_problem(arguments: Any) -> str | None:
    if not isinstance(arguments, str):
        return None  # an object: serialised to JSON when built
    try:
        parsed = loads_strict(arguments)
    except (StrictJSONError, InputLimitError) as exc:
        return f"arguments are not strict JSON ({exc}); give the JSON text of an object, or an object"
    if not isinstance(parsed, dict):
        return f"arguments are a JSON {type(parsed).__name__}, not an object"
    return None


def _dotted(loc: Loc) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out
