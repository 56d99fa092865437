"""A chat-completions provider whose prompt template decides what replayed reasoning it reads.

``reads``  the assistant-message fields the template renders (first present wins), e.g.
           ("reasoning_content",) for a Qwen3-style template; () ignores every field.
``scope``  "all": reasoning of every assistant turn is rendered; "after_last_user": only of
           assistant turns after the last user message (what Qwen3 templates do); "last_step":
           only of the last assistant turn, when no user message follows it.
``rejects`` field -> 400 error message, like a strict schema ("Extra inputs are not permitted").
``refuse`` a phrase that, in a user turn, earns xAI's 403 refusal.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field
from typing import Any

from tests.fake_provider import Reply, Request
from .tokens import TURN1_REASONING, answer_from, count, decrypt, dumps, encrypt

REFUSAL = "I'm sorry, I can't help with that request."


@dataclass
class ChatProvider:
    key: str = ""
    reads: tuple[str, ...] = ("reasoning_content", "reasoning", "reasoning_details")
    scope: str = "all"
    rejects: dict[str, str] = field(default_factory=dict)
    refuse: str = ""
    id_prefix: str = "chatcmpl-"
    cost: float | None = None
    no_usage: bool = False
    non_json: bool = False
    turn1_fields: tuple[str, ...] = ("reasoning_content", "reasoning_details")
    turn1_min_effort: str = "low"  # below this effort turn 1 returns no reasoning
    rejects_params: dict[str, str] = field(default_factory=dict)  # body key -> 400 message
    # "unforced": turn 1 answers in text unless tool_choice forces the call (as every real
    # template served by llama.cpp did); "always": it calls the tool whatever is sent
    turn1_tool: str = "always"
    fingerprint: str | None = None  # system_fingerprint on every answer
    _ids: Any = field(default_factory=itertools.count)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def handle(self, request: Request) -> Reply:
        if request.method == "GET":
            return Reply(status=200, body={"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
        if self.key and request.headers.get("authorization") != f"Bearer {self.key}":
            shown = request.headers.get("authorization", "").removeprefix("Bearer ")
            return Reply(status=401, body={"error": {"message": f"Incorrect API key provided: {shown}",
                                          "type": "invalid_request_error"}})
        if self.non_json:
            return Reply(status=200, raw=b"<html><body>502 Bad Gateway</body></html>", content_type="text/html")
        body = request.body or {}
        for param, message in self.rejects_params.items():
            if param in body:
                return Reply(status=400, body={"error": {"message": message, "type": "invalid_request_error"}})
        messages = body.get("messages") or []
        for message in messages:
            for name, error in self.rejects.items():
                if message.get("role") == "assistant" and name in message:
                    return Reply(status=400, body={"error": {"message": error, "type": "invalid_request_error",
                                                  "param": f"messages[{messages.index(message)}].{name}"}})
            if self.refuse and message.get("role") == "user" and self.refuse in str(message.get("content")):
                return Reply(status=403, body={"code": "The caller does not have permission to execute the "
                                            "specified operation", "error": REFUSAL})
        prompt = self.render(messages, body.get("tools") or [])
        if not any(m.get("role") == "tool" for m in messages):
            return self._turn1(body, prompt)
        reply = {"role": "assistant", "content": answer_from(prompt)}
        return self._answer(reply, prompt, completion=2)

    # ---- the template
    def render(self, messages: list[dict[str, Any]], tools: list[Any]) -> str:
        last_user = max([i for i, m in enumerate(messages) if m.get("role") == "user"], default=-1)
        last_assistant = max([i for i, m in enumerate(messages) if m.get("role") == "assistant"], default=-1)
        out = [f"<tools>{dumps(tools)}</tools>"]
        for i, message in enumerate(messages):
            role = message.get("role")
            text = str(message.get("content") or "")
            if role == "assistant":
                keep = (self.scope == "all" or (self.scope == "after_last_user" and i > last_user)
                        or (self.scope == "last_step" and i == last_assistant > last_user))
                thought = self.reasoning_of(message) if keep else ""
                if thought:
                    text = f"<think>{thought}</think>{text}"
                for call in message.get("tool_calls") or []:
                    text += f"<tool_call>{dumps(call.get('function'))}</tool_call>"
            out.append(f"<|{role}|>{text}<|end|>")
        return "\n".join(out)

    def reasoning_of(self, message: dict[str, Any]) -> str:
        for name in self.reads:
            value = message.get(name)
            if name == "reasoning_details" and isinstance(value, list):
                texts = []
                for detail in value:
                    if detail.get("type") == "reasoning.encrypted":
                        texts.append(decrypt(str(detail.get("data"))) or "")
                    else:
                        texts.append(str(detail.get("text") or detail.get("summary") or ""))
                value = " ".join(t for t in texts if t)
            if isinstance(value, str) and value:
                return value
        return ""

    # ---- responses
    def _turn1(self, body: dict[str, Any], prompt: str) -> Reply:
        effort = (body.get("reasoning") or {}).get("effort") or body.get("reasoning_effort") or "low"
        order = ("low", "medium", "high")
        thinks = order.index(effort) >= order.index(self.turn1_min_effort)
        message: dict[str, Any] = {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_live_1", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}]}
        if self.turn1_tool == "unforced" and body.get("tool_choice") in (None, "auto"):
            message = {"role": "assistant", "content": "It is probably mild in Paris."}
        if thinks:
            if "reasoning_content" in self.turn1_fields:
                message["reasoning_content"] = TURN1_REASONING
            if "reasoning_details" in self.turn1_fields:
                message["reasoning_details"] = [
                    {"type": "reasoning.encrypted", "data": encrypt(TURN1_REASONING),
                     "format": "anthropic-claude-v1", "index": 0}]
        return self._answer(message, prompt, completion=40 if thinks else 12, reasoning=30 if thinks else 0)

    def _answer(self, message: dict[str, Any], prompt: str, completion: int, reasoning: int = 0) -> Reply:
        with self._lock:
            n = next(self._ids)
        rid = f"{self.id_prefix}{n:06d}"
        body: dict[str, Any] = {"id": rid, "object": "chat.completion",
                                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
        if self.fingerprint is not None:
            body["system_fingerprint"] = self.fingerprint
        if not self.no_usage:
            usage: dict[str, Any] = {"prompt_tokens": count(prompt), "completion_tokens": completion,
                                     "total_tokens": count(prompt) + completion,
                                     "completion_tokens_details": {"reasoning_tokens": reasoning}}
            if self.cost is not None:
                usage["cost"] = self.cost
            body["usage"] = usage
        return Reply(status=200, body=body)
