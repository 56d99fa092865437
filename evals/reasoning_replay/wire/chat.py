"""OpenAI-compatible ``/chat/completions``."""

from __future__ import annotations

import json
from typing import Any

from capplan.evals.reasoning_replay.fixture import TOOL_DESCRIPTION, TOOL_NAME, TOOL_PARAMETERS
from capplan.evals.reasoning_replay.wire.base import Parsed, as_int, dig, merge, provider_cost
from capplan.evals.reasoning_replay.wire.knobs import Knobs

TOOLS = [{"type": "function", "function": {"name": TOOL_NAME, "description": TOOL_DESCRIPTION,
                                           "parameters": TOOL_PARAMETERS}}]


class ChatWire:
    """Chat completions, as OpenAI, OpenRouter, the Portal and most vendors speak it."""

    kind = "chat"

    def path(self, model: str) -> str:
        return "/chat/completions"

    def body(self, model: str, payload: list[dict[str, Any]], knobs: Knobs, max_tokens: int,
             extra: dict[str, Any] | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"model": model, "messages": payload, "tools": TOOLS,
                                knobs.max_tokens_key: max_tokens}
        if knobs.temperature is not None:
            body["temperature"] = knobs.temperature
        if knobs.effort and knobs.effort_style == "reasoning":
            body["reasoning"] = {"effort": knobs.effort}
        elif knobs.effort and knobs.effort_style == "reasoning_effort":
            body["reasoning_effort"] = knobs.effort
        return merge(body, extra)

    def parse(self, body: dict[str, Any]) -> Parsed:
        usage = body.get("usage")
        message = dig(body, "choices", 0, "message")
        message = message if isinstance(message, dict) else {}
        return Parsed(
            response_id=str(body.get("id") or ""),
            prompt_tokens=as_int(dig(usage, "prompt_tokens")),
            completion_tokens=as_int(dig(usage, "completion_tokens")),
            reasoning_tokens=as_int(dig(usage, "completion_tokens_details", "reasoning_tokens")),
            cached_tokens=as_int(dig(usage, "prompt_tokens_details", "cached_tokens")),
            provider_cost=provider_cost(usage),
            answer=_answer(message),
            reasoning_text=reasoning_text(message),
            provider=body.get("provider") if isinstance(body.get("provider"), str) else None,
            fingerprint=body.get("system_fingerprint") if isinstance(body.get("system_fingerprint"), str) else None,
        )


def _answer(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):  # content parts
        content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    calls = " ".join(json.dumps(dig(c, "function", "arguments") or "")
                     for c in message.get("tool_calls") or [] if isinstance(c, dict))
    return f"{content or ''} {calls}".strip()


def reasoning_text(message: dict[str, Any]) -> str:
    """Every readable reasoning string of an assistant message, joined."""
    texts = [str(message.get(k) or "") for k in ("reasoning_content", "reasoning")]
    for detail in message.get("reasoning_details") or []:
        if isinstance(detail, dict):
            texts.append(str(detail.get("text") or detail.get("summary") or ""))
    return " ".join(t for t in texts if t)
