"""Step 2 on the Responses API: replay the turn-1 ``reasoning`` items (with their
``encrypted_content``) or leave them out; optionally ask for ``reasoning.context: all_turns``.

The replayed items are the ones capplan's ``openai_responses`` codec puts on the wire (a test
under ``tests/`` holds them byte for byte to the plan's request): each encrypted reasoning item as
``{type, id, summary, encrypted_content[, content]}`` right before the ``function_call`` it
preceded, which carries its own ``id`` back, so the provider can pair the two. With ``store: false``
the ids look nothing up: the encrypted payload carries the reasoning. Without the reasoning items
(the stripped baseline) the call goes back by ``call_id`` alone, since a call replayed by its id
without its reasoning item is refused. A reasoning item with no encrypted payload is not replayed
(by id alone it names nothing the provider kept).
"""

from __future__ import annotations

from typing import Any

from capplan.evals.reasoning_replay.fixture import TOOL_NAME, USER_TASK
from capplan.evals.reasoning_replay.opaque.capture import Capture, Payload
from capplan.evals.reasoning_replay.routes import Route
from capplan.evals.reasoning_replay.wire.carriers import responses_tail

ALL_TURNS = {"reasoning": {"context": "all_turns"}}


class ResponsesFlavour:
    """Opaque carriers of Responses routes."""

    def turn1_payload(self) -> Payload:
        return [{"role": "user", "content": USER_TASK}]

    def force_tool(self, choice: str) -> dict[str, Any]:
        if choice == "tool":
            return {"tool_choice": {"type": "function", "name": TOOL_NAME}}
        return {"tool_choice": "required"}

    def capture(self, body: dict[str, Any], route: Route) -> Capture:
        output = [o for o in body.get("output") or [] if isinstance(o, dict)]
        reasoning = [o for o in output if o.get("type") == "reasoning"]
        call = next((o for o in output if o.get("type") == "function_call"), None)
        texts = [str(s.get("text", "")) for o in reasoning for s in o.get("summary") or []
                 if isinstance(s, dict)]
        summary = {
            "has_tool_call": call is not None,
            "carriers": ["reasoning_item"] * len(reasoning),
            "detail_formats": sorted({"encrypted" if o.get("encrypted_content") else "plain"
                                      for o in reasoning}),
            "signed": sum(1 for o in reasoning if o.get("encrypted_content")),
            "reasoning_chars": sum(len(t) for t in texts), "reasoning_sample": " ".join(texts)[:160],
        }
        if call is None or not reasoning:
            return Capture(False, summary)
        fc = {"type": "function_call", "call_id": call.get("call_id"), "name": call.get("name"),
              "arguments": call.get("arguments")}
        replay = [replay_item(o) for o in reasoning if o.get("encrypted_content")]
        if not replay:
            return Capture(False, summary)
        # the call goes back with its id only beside its reasoning items: the provider pairs them by it
        paired = {**fc, "id": call["id"]} if isinstance(call.get("id"), str) else fc
        return Capture(True, summary, call_id=str(call.get("call_id") or ""),
                       turns={"stripped": [fc], "verbatim": [*replay, paired]})

    def turn2(self, capture: Capture, position: str, probe: str, route: Route
              ) -> list[tuple[str, Payload, dict[str, Any] | None]]:
        head = [{"role": "user", "content": USER_TASK}]
        tail = responses_tail(position, probe, capture.call_id)
        cells: list[tuple[str, Payload, dict[str, Any] | None]] = [
            (variant, [*head, *items, *tail], None) for variant, items in capture.turns.items()]
        if route.all_turns_context:
            cells += [(f"{variant}+all_turns", payload, ALL_TURNS) for variant, payload, _ in list(cells)]
        return cells


def replay_item(item: dict[str, Any]) -> dict[str, Any]:
    """A reasoning output item as it goes back as input: its own fields, none that describe the answer."""
    out: dict[str, Any] = {"type": "reasoning"}
    if isinstance(item.get("id"), str):
        out["id"] = item["id"]
    summary = item.get("summary")
    out["summary"] = summary if isinstance(summary, list) else []  # required on input
    out["encrypted_content"] = item["encrypted_content"]
    if item.get("content") is not None:
        out["content"] = item["content"]
    return out
