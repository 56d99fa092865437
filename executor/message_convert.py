"""Request messages become wire messages: the OpenAI-style list litellm receives.

Three policies act here and nowhere else: the reasoning codec's replay payload is spliced onto
every assistant message that carries reasoning, the message-assembly policy decides what an
empty tool-call turn says, and the content policy renders each tool result.
"""

from __future__ import annotations

import json
from typing import Any

from executor.messages import ReasoningIn
from executor.policy_set import PolicySet


class MessageConverter:
    """Converts request messages (as dicts) for one plan's policies."""

    def __init__(self, policies: PolicySet) -> None:
        self.codec = policies.reasoning_codec
        self.assembly = policies.message_assembly_policy
        self.content = policies.content_policy

    def convert(self, system: str | list[dict[str, Any]] | None, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The wire list: the system message (when there is one) then every turn in order."""
        wire: list[dict[str, Any]] = []
        if system:
            wire.append({"role": "system", "content": system})
        for msg in messages:
            role = msg["role"]
            if role == "user":
                wire.append({"role": "user", "content": _user_content(msg["content"])})
            elif role == "assistant":
                wire.append(self._assistant(msg))
            elif role == "tool":
                wire.append(self._tool(msg))
            else:
                raise ValueError(f"unknown message role {role!r}")
        return wire

    def _assistant(self, msg: dict[str, Any]) -> dict[str, Any]:
        calls = msg.get("tool_calls") or []
        content = self.assembly.assistant_content(msg.get("content"), has_tool_calls=bool(calls))
        out: dict[str, Any] = {"role": "assistant", "content": content or ""}
        if calls:
            out["tool_calls"] = [_tool_call(c) for c in calls]
        reasoning = msg.get("reasoning")
        if reasoning is not None:
            payload = self.codec.encode_for_replay(ReasoningIn.model_validate(reasoning).to_structured())
            if payload:
                out.update(payload)
        return out

    def _tool(self, msg: dict[str, Any]) -> dict[str, Any]:
        content = self.content.render_tool_result(msg["content"], msg.get("images") or [])
        return {"role": "tool", "tool_call_id": msg["tool_call_id"], "content": content}


def _user_content(content: str | list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    return [_without_none(part) for part in content]


def _without_none(value: Any) -> Any:
    # the request model spells unset optional keys as null; the wire omits them
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    return value


def _tool_call(call: dict[str, Any]) -> dict[str, Any]:
    function = call["function"]
    arguments = function["arguments"]
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return {"id": call["id"], "type": "function", "function": {"name": function["name"], "arguments": arguments}}
