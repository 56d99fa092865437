"""Step 2 on Gemini native: replay the model turn's parts with their ``thoughtSignature``
verbatim, strip them, or send the documented dummy signature instead."""

from __future__ import annotations

from typing import Any

from capplan.evals.reasoning_replay.fixture import TOOL_NAME, USER_TASK
from capplan.evals.reasoning_replay.opaque.capture import Capture, Payload
from capplan.evals.reasoning_replay.routes import Route
from capplan.evals.reasoning_replay.wire.base import dig
from capplan.evals.reasoning_replay.wire.carriers import GEMINI_DUMMY_SIGNATURE, gemini_tail


class GeminiFlavour:
    """Opaque carriers of Gemini-native routes."""

    def turn1_payload(self) -> Payload:
        return [{"role": "user", "parts": [{"text": USER_TASK}]}]

    def force_tool(self, choice: str) -> dict[str, Any]:
        config: dict[str, Any] = {"mode": "ANY"}
        if choice == "tool":
            config["allowedFunctionNames"] = [TOOL_NAME]
        return {"toolConfig": {"functionCallingConfig": config}}

    def capture(self, body: dict[str, Any], route: Route) -> Capture:
        parts = [p for p in dig(body, "candidates", 0, "content", "parts") or [] if isinstance(p, dict)]
        call = next((p for p in parts if isinstance(p.get("functionCall"), dict)), None)
        thoughts = [str(p.get("text", "")) for p in parts if p.get("thought")]
        signed = sum(1 for p in parts if p.get("thoughtSignature"))
        summary = {
            "has_tool_call": call is not None,
            "carriers": (["thought_part"] * len(thoughts)) + (["thoughtSignature"] * signed),
            "detail_formats": ["thoughtSignature"] if signed else [],
            "signed": signed,
            "reasoning_chars": sum(len(t) for t in thoughts), "reasoning_sample": " ".join(thoughts)[:160],
        }
        if call is None or not (thoughts or signed):
            return Capture(False, summary)
        function_call = call["functionCall"]
        return Capture(True, summary, turns={
            "stripped": {"role": "model", "parts": [{"functionCall": function_call}]},
            "dummy_signature": {"role": "model", "parts": [
                {"functionCall": function_call, "thoughtSignature": GEMINI_DUMMY_SIGNATURE}]},
            "verbatim": {"role": "model", "parts": parts},
        })

    def turn2(self, capture: Capture, position: str, probe: str, route: Route
              ) -> list[tuple[str, Payload, dict[str, Any] | None]]:
        head = [{"role": "user", "parts": [{"text": USER_TASK}]}]
        tail = gemini_tail(position, probe)
        return [(variant, [*head, turn, *tail], None) for variant, turn in capture.turns.items()]
