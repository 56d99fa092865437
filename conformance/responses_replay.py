"""How a correct Responses API client carries a conversation, for conformance runs to compare with.

A Responses route (whatever sends it: capplan's own transport, the openai SDK, litellm's bridge)
must replay the model's output items as the next request's input: every ``reasoning`` item
verbatim (id, summary, encrypted content) and immediately followed by the item it preceded, each
``function_call`` with its ``id`` and ``call_id``, then one ``function_call_output`` per call. On a
model or route switch the origin-bound part goes: reasoning items are dropped, and so are the ids
that point at them (a ``function_call`` keeps only its ``call_id``).

:func:`run_tool_loop` drives such a loop through any ``send`` callable (a request dict in, the
status and JSON answer out), so the reference loop and a route's own loop can be held to the same
emulator and their requests compared item by item.
"""

from __future__ import annotations

import copy
import json
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: send one request body; answer (HTTP status, decoded JSON answer)
Send = Callable[[dict[str, Any]], "tuple[int, Any]"]
#: run one tool call: (name, decoded arguments) -> the output string the model reads
RunTool = Callable[[str, dict[str, Any]], str]

#: what an input item may carry, per type (the output object's other fields are not input)
_INPUT_FIELDS: dict[str, tuple[str, ...]] = {
    "reasoning": ("type", "id", "summary", "encrypted_content", "content", "status"),
    "function_call": ("type", "id", "call_id", "name", "arguments", "status"),
    "message": ("type", "id", "role", "content", "status"),
}


def replay_items(output: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A response's ``output`` as input items for the next request: verbatim, in order.

    Reasoning items keep their id, summary and encrypted content byte for byte (the provider
    verifies them); nothing is reordered, so each reasoning item stays right before its follower.
    """
    items: list[dict[str, Any]] = []
    for item in output:
        kind = str(item.get("type"))
        keep = _INPUT_FIELDS.get(kind)
        copied = copy.deepcopy(dict(item))
        items.append({key: value for key, value in copied.items() if key in keep} if keep else copied)
    return items


def function_calls(output: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The ``function_call`` items of a response's output, in order."""
    return [item for item in output if item.get("type") == "function_call"]


def call_outputs(calls: Sequence[Mapping[str, Any]], run_tool: RunTool) -> list[dict[str, Any]]:
    """One ``function_call_output`` per call, answering its ``call_id``."""
    outputs: list[dict[str, Any]] = []
    for call in calls:
        try:
            arguments = json.loads(str(call.get("arguments") or "{}"))
        except ValueError:
            arguments = {}
        outputs.append({"type": "function_call_output", "call_id": call["call_id"],
                        "output": run_tool(str(call.get("name")), arguments if isinstance(arguments, dict) else {})})
    return outputs


def drop_origin_bound(items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``items`` as they may go to another model or route: no reasoning items, no provider item ids.

    A ``function_call`` keeps its ``call_id`` (its output still answers it); an assistant message
    keeps its text. Without their ids neither names a reasoning item the new origin cannot read.
    """
    kept: list[dict[str, Any]] = []
    for item in items:
        if item.get("type") == "reasoning":
            continue
        copied = copy.deepcopy(dict(item))
        if copied.get("type") in ("function_call", "message") and "id" in copied:
            del copied["id"]
        kept.append(copied)
    return kept


def output_text(output: Sequence[Mapping[str, Any]]) -> str | None:
    """The assistant text of a response's output, or ``None`` when it only called tools."""
    texts = [part.get("text", "") for item in output if item.get("type") == "message"
             for part in item.get("content") or () if isinstance(part, dict) and part.get("type") == "output_text"]
    return "".join(texts) if texts else None


@dataclass
class LoopStep:
    """One request of a tool loop and what it was answered."""

    request: dict[str, Any]
    status: int
    answer: Any


@dataclass
class LoopResult:
    """A tool loop: every step, and the conversation's input items after the last one."""

    steps: list[LoopStep] = field(default_factory=list)
    items: list[dict[str, Any]] = field(default_factory=list)

    @property
    def accepted(self) -> bool:
        """Whether every request of the loop was answered 200."""
        return bool(self.steps) and all(step.status == 200 for step in self.steps)

    @property
    def final_text(self) -> str | None:
        last = self.steps[-1] if self.steps else None
        if last is None or last.status != 200 or not isinstance(last.answer, dict):
            return None
        return output_text(last.answer.get("output") or [])


def run_tool_loop(send: Send, request: Mapping[str, Any], run_tool: RunTool, *, max_steps: int = 16) -> LoopResult:
    """Send ``request``, run every tool call it answers, replay, and repeat until a text answer.

    Stops at the first refusal (its step is the last), at a text answer, or after ``max_steps``
    requests. ``request["input"]`` is the conversation so far (a list of items, or a string).
    """
    base = {key: copy.deepcopy(value) for key, value in request.items() if key != "input"}
    raw = request.get("input")
    items: list[dict[str, Any]] = ([{"role": "user", "content": raw}] if isinstance(raw, str)
                                   else [copy.deepcopy(dict(item)) for item in raw or ()])
    result = LoopResult(items=items)
    for _ in range(max_steps):
        body = {**copy.deepcopy(base), "input": copy.deepcopy(items)}
        status, answer = send(body)
        result.steps.append(LoopStep(body, status, answer))
        if status != 200 or not isinstance(answer, dict):
            break
        output = answer.get("output") or []
        items += replay_items(output)
        calls = function_calls(output)
        if not calls:
            break
        items += call_outputs(calls, run_tool)
    return result


def http_send(base_url: str, *, api_key: str = "test-key", timeout_s: float = 30.0) -> Send:
    """A :data:`Send` that POSTs to ``{base_url}/responses`` (stdlib HTTP, bounded by ``timeout_s``)."""
    url = base_url.rstrip("/") + "/responses"

    def send(body: dict[str, Any]) -> tuple[int, Any]:
        data = json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method="POST",
                                     headers={"Content-Type": "application/json", "Authorization": f"Bearer {api_key}"})
        try:
            with urllib.request.urlopen(req, timeout=timeout_s) as response:  # noqa: S310 (the caller's own URL)
                return int(response.status), json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return int(exc.code), json.loads(exc.read() or b"null")

    return send
