"""Gemini native ``models/{model}:generateContent``."""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

from capplan.evals.reasoning_replay.fixture import SYSTEM, TOOL_DESCRIPTION, TOOL_NAME, TOOL_PARAMETERS
from capplan.evals.reasoning_replay.wire.base import Parsed, as_int, dig, merge
from capplan.evals.reasoning_replay.wire.knobs import GEMINI_BUDGETS, Knobs

TOOLS = [{"functionDeclarations": [{"name": TOOL_NAME, "description": TOOL_DESCRIPTION,
                                    "parameters": TOOL_PARAMETERS}]}]


class GeminiWire:
    """Contents and parts; thoughts are asked for so signatures come back."""

    kind = "gemini"

    def path(self, model: str) -> str:
        name = model.removeprefix("models/")
        return f"/models/{urllib.parse.quote(name, safe='-._~/')}:generateContent"

    def body(self, model: str, payload: list[dict[str, Any]], knobs: Knobs, max_tokens: int,
             extra: dict[str, Any] | None = None) -> dict[str, Any]:
        config: dict[str, Any] = {"maxOutputTokens": max_tokens}
        if knobs.temperature is not None:
            config["temperature"] = knobs.temperature
        if knobs.effort and knobs.effort_style == "gemini_level":
            config["thinkingConfig"] = {"includeThoughts": True, "thinkingLevel": knobs.effort}
        elif knobs.effort and knobs.effort_style == "gemini_budget":
            config["thinkingConfig"] = {"includeThoughts": True,
                                        "thinkingBudget": GEMINI_BUDGETS[knobs.effort]}
        body = {"systemInstruction": {"parts": [{"text": SYSTEM}]}, "contents": payload,
                "tools": TOOLS, "generationConfig": config}
        return merge(body, extra)

    def parse(self, body: dict[str, Any]) -> Parsed:
        usage = body.get("usageMetadata")
        parts = dig(body, "candidates", 0, "content", "parts") or []
        answer, thoughts = [], []
        for part in parts:
            if not isinstance(part, dict):
                continue
            if part.get("thought"):
                thoughts.append(str(part.get("text", "")))
            elif "functionCall" in part:
                answer.append(json.dumps(dig(part, "functionCall", "args") or {}))
            else:
                answer.append(str(part.get("text", "")))
        return Parsed(
            response_id=str(body.get("responseId") or ""),
            prompt_tokens=as_int(dig(usage, "promptTokenCount")),
            completion_tokens=as_int(dig(usage, "candidatesTokenCount")),
            reasoning_tokens=as_int(dig(usage, "thoughtsTokenCount")),
            cached_tokens=as_int(dig(usage, "cachedContentTokenCount")),
            answer=" ".join(answer).strip(),
            reasoning_text=" ".join(thoughts).strip(),
        )
