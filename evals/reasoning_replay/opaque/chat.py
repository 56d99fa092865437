"""Step 2 on chat completions: replay ``reasoning_content`` / ``reasoning`` /
``reasoning_details`` and tool-call ``extra_content`` exactly as turn 1 returned them."""

from __future__ import annotations

import copy
from typing import Any

from capplan.evals.reasoning_replay.fixture import SYSTEM, TOOL_NAME, USER_TASK
from capplan.evals.reasoning_replay.opaque.capture import Capture, Payload
from capplan.evals.reasoning_replay.routes import Route
from capplan.evals.reasoning_replay.wire.base import dig
from capplan.evals.reasoning_replay.wire.carriers import GEMINI_DUMMY_SIGNATURE, chat_tail
from capplan.evals.reasoning_replay.wire.chat import reasoning_text

CARRIER_KEYS = ("reasoning_content", "reasoning", "reasoning_details")


class ChatFlavour:
    """Opaque carriers of OpenAI-compatible chat routes."""

    def turn1_payload(self) -> Payload:
        return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER_TASK}]

    def force_tool(self, choice: str) -> dict[str, Any]:
        if choice == "tool":
            return {"tool_choice": {"type": "function", "function": {"name": TOOL_NAME}}}
        return {"tool_choice": "required"}

    def capture(self, body: dict[str, Any], route: Route) -> Capture:
        message = dig(body, "choices", 0, "message") or {}
        calls = [c for c in message.get("tool_calls") or [] if isinstance(c, dict)]
        carriers = [k for k in CARRIER_KEYS if message.get(k)]
        details = [d for d in message.get("reasoning_details") or [] if isinstance(d, dict)]
        extra_content = bool(calls and calls[0].get("extra_content"))
        text = reasoning_text(message)
        summary = {
            "has_tool_call": bool(calls),
            "carriers": carriers + (["extra_content"] if extra_content else []),
            "detail_formats": sorted({f"{d.get('type')}|{d.get('format')}" for d in details}),
            "signed": sum(1 for d in details if d.get("signature") or d.get("data")),
            "reasoning_chars": len(text), "reasoning_sample": text[:160],
        }
        if not calls or not (carriers or extra_content):
            return Capture(False, summary)
        first = calls[0]
        stripped: dict[str, Any] = {"role": "assistant", "content": message.get("content") or "",
                    "tool_calls": [{"id": first.get("id"), "type": "function",
                                    "function": first.get("function")}]}
        verbatim = copy.deepcopy(stripped)
        if extra_content:
            verbatim["tool_calls"][0]["extra_content"] = first["extra_content"]
        for key in carriers:
            verbatim[key] = message[key]
        turns: dict[str, Any] = {"stripped": stripped, "verbatim": verbatim}
        if route.gemini_signature:
            dummy = copy.deepcopy(stripped)
            dummy["tool_calls"][0]["extra_content"] = {"google": {"thought_signature": GEMINI_DUMMY_SIGNATURE}}
            turns["dummy_signature"] = dummy
        return Capture(True, summary, call_id=str(first.get("id") or ""), turns=turns)

    def turn2(self, capture: Capture, position: str, probe: str, route: Route
              ) -> list[tuple[str, Payload, dict[str, Any] | None]]:
        head = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER_TASK}]
        tail = chat_tail(position, probe, capture.call_id)
        return [(variant, [*head, turn, *tail], None) for variant, turn in capture.turns.items()]
