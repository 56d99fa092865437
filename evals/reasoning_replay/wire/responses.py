"""OpenAI Responses API ``/responses`` (stateless: ``store: false``)."""

from __future__ import annotations

from typing import Any

from capplan.evals.reasoning_replay.fixture import SYSTEM, TOOL_DESCRIPTION, TOOL_NAME, TOOL_PARAMETERS
from capplan.evals.reasoning_replay.wire.base import Parsed, as_int, dig, merge, provider_cost
from capplan.evals.reasoning_replay.wire.knobs import Knobs

TOOLS = [{"type": "function", "name": TOOL_NAME, "description": TOOL_DESCRIPTION,
          "parameters": TOOL_PARAMETERS}]


class ResponsesWire:
    """Responses input items in, output items out; encrypted reasoning is requested."""

    kind = "responses"

    def path(self, model: str) -> str:
        return "/responses"

    def body(self, model: str, payload: list[dict[str, Any]], knobs: Knobs, max_tokens: int,
             extra: dict[str, Any] | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"model": model, "instructions": SYSTEM, "input": payload,
                                "tools": TOOLS, "store": False,
                                "include": ["reasoning.encrypted_content"],
                                "max_output_tokens": max_tokens}
        if knobs.effort and knobs.effort_style == "responses":
            body["reasoning"] = {"effort": knobs.effort, "summary": "auto"}
        if knobs.temperature is not None:
            body["temperature"] = knobs.temperature
        return merge(body, extra)

    def parse(self, body: dict[str, Any]) -> Parsed:
        usage = body.get("usage")
        answer: list[str] = []
        reasoning: list[str] = []
        for item in body.get("output") or []:
            if not isinstance(item, dict):
                continue
            if item.get("type") == "message":
                answer += [str(c.get("text", "")) for c in item.get("content") or [] if isinstance(c, dict)]
            elif item.get("type") == "function_call":
                answer.append(str(item.get("arguments", "")))
            elif item.get("type") == "reasoning":
                for part in (item.get("summary") or []) + (item.get("content") or []):
                    if isinstance(part, dict):
                        reasoning.append(str(part.get("text", "")))
        return Parsed(
            response_id=str(body.get("id") or ""),
            prompt_tokens=as_int(dig(usage, "input_tokens")),
            completion_tokens=as_int(dig(usage, "output_tokens")),
            reasoning_tokens=as_int(dig(usage, "output_tokens_details", "reasoning_tokens")),
            cached_tokens=as_int(dig(usage, "input_tokens_details", "cached_tokens")),
            provider_cost=provider_cost(usage),
            answer=" ".join(answer).strip(),
            reasoning_text=" ".join(reasoning).strip(),
        )
