"""A stateless Responses API: encrypted reasoning items, kept only within the current tool loop
unless ``reasoning.context == "all_turns"`` (which only some models accept)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from tests.fake_provider import Reply, Request
from .tokens import TURN1_REASONING, answer_from, count, decrypt, dumps, encrypt


@dataclass
class ResponsesProvider:
    key: str = ""
    all_turns_models: tuple[str, ...] = ()
    _ids: Any = field(default_factory=itertools.count)

    def handle(self, request: Request) -> Reply:
        if request.headers.get("authorization") != f"Bearer {self.key}":
            return Reply(status=401, body={"error": {"message": "Incorrect API key provided", "type": "auth"}})
        body = request.body or {}
        context = (body.get("reasoning") or {}).get("context")
        if context is not None and body.get("model") not in self.all_turns_models:
            return Reply(status=400, body={"error": {"message": "Unsupported parameter: 'reasoning.context' is "
                                                     "not supported with this model.",
                                          "type": "invalid_request_error", "param": "reasoning.context"}})
        items = body.get("input") or []
        for item in items:
            # conformance rule responses.reasoning_item_not_persisted: an id names nothing under
            # store: false, so an item that has only its id is refused; its encrypted payload carries it
            if (item.get("type") == "reasoning" and "id" in item and item.get("encrypted_content") is None
                    and body.get("store") is False):
                return Reply(status=404, body={"error": {"message": f"Item with id '{item['id']}' not found. Items "
                                                         "are not persisted when `store` is set to false."}})
            blob = item.get("encrypted_content")
            if blob is not None and decrypt(str(blob)) is None:
                return Reply(status=400, body={"error": {"message": "The encrypted content could not be verified."}})
        prompt = self.render(body, items, keep_all=context == "all_turns")
        if not any(i.get("type") == "function_call_output" for i in items):
            return self._answer([
                {"id": "rs_live_1", "type": "reasoning", "status": "completed",
                 "summary": [{"type": "summary_text", "text": "Checking Paris weather."}],
                 "encrypted_content": encrypt(TURN1_REASONING)},
                {"id": "fc_live_1", "type": "function_call", "status": "completed",
                 "call_id": "call_resp_1", "name": "get_weather", "arguments": '{"city":"Paris"}'}],
                prompt, 30)
        return self._answer([{"type": "message", "role": "assistant",
                              "content": [{"type": "output_text", "text": answer_from(prompt)}]}], prompt, 2)

    def render(self, body: dict[str, Any], items: list[dict[str, Any]], keep_all: bool) -> str:
        last_user = max([i for i, it in enumerate(items) if it.get("role") == "user"], default=-1)
        out = [f"<tools>{dumps(body.get('tools'))}</tools>", f"<|system|>{body.get('instructions')}"]
        for i, item in enumerate(items):
            kind = item.get("type")
            if kind == "reasoning":
                if keep_all or i > last_user:
                    texts = [str(p.get("text")) for p in (item.get("summary") or []) + (item.get("content") or [])]
                    if item.get("encrypted_content"):
                        texts.append(decrypt(str(item["encrypted_content"])) or "")
                    out.append("<think>" + " ".join(texts) + "</think>")
            elif kind == "function_call":
                out.append(f"<tool_call>{item.get('name')} {item.get('arguments')}</tool_call>")
            elif kind == "function_call_output":
                out.append(f"<|tool|>{item.get('output')}")
            else:
                out.append(f"<|{item.get('role')}|>{item.get('content')}")
        return "\n".join(out)

    def _answer(self, output: list[dict[str, Any]], prompt: str, completion: int) -> Reply:
        return Reply(status=200, body={"id": f"resp_{next(self._ids):05d}", "object": "response", "output": output,
                            "usage": {"input_tokens": count(prompt), "output_tokens": completion,
                                      "output_tokens_details": {"reasoning_tokens": completion // 2}}})
