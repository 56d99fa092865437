"""Gemini native generateContent with Gemini 3 thought-signature rules.

Thought text parts from history are dropped (never fed back). A signature on a function
call of the current turn (after the last user text) is validated and its reasoning is
restored into the prompt; an unsigned function call in the current turn is a 400; the
documented dummy signature passes validation and restores nothing.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from tests.fake_provider import Reply, Request
from .tokens import TURN1_REASONING, answer_from, count, decrypt, dumps, encrypt

DUMMY = "skip_thought_signature_validator"
MISSING = ("Function call is missing a thought_signature in functionCall parts. This is required "
           "for tools to work correctly, and missing thought_signature may lead to degraded model "
           "performance. Additional data, function call `default_api:get_weather` , position 2.")


@dataclass
class GeminiProvider:
    key: str = ""
    _ids: Any = field(default_factory=itertools.count)

    def handle(self, request: Request) -> Reply:
        if request.headers.get("x-goog-api-key") != self.key or "key=" in request.path:
            return Reply(status=400, body=[{"error": {"code": 400, "message": "API key not valid.",
                                           "status": "INVALID_ARGUMENT"}}])
        if not request.path.endswith(":generateContent"):
            return Reply(status=404, body={"error": {"message": f"no route {request.path}"}})
        body = request.body or {}
        contents = body.get("contents") or []
        last_user_text = max([i for i, c in enumerate(contents) if c.get("role") == "user"
                              and any("text" in p for p in c.get("parts") or [])], default=-1)
        lines = [f"<tools>{dumps(body.get('tools'))}</tools>",
                 f"<|system|>{body['systemInstruction']['parts'][0]['text']}"]
        for i, content in enumerate(contents):
            current = i > last_user_text
            for part in content.get("parts") or []:
                if part.get("thought"):
                    continue
                if "functionCall" in part:
                    signature = part.get("thoughtSignature")
                    if current and not signature:
                        return Reply(status=400, body={"error": {"code": 400, "message": MISSING,
                                                      "status": "INVALID_ARGUMENT"}})
                    restored = decrypt(signature) if current and signature and signature != DUMMY else None
                    if restored:
                        lines.append(f"<think>{restored}</think>")
                    lines.append(f"<call>{dumps(part['functionCall'])}</call>")
                elif "functionResponse" in part:
                    lines.append(f"<|tool|>{dumps(part['functionResponse'])}")
                else:
                    lines.append(f"<|{content.get('role')}|>{part.get('text')}")
        prompt = "\n".join(lines)
        if not any("functionResponse" in p for c in contents for p in c.get("parts") or []):
            parts = [{"text": "Planning a weather lookup for Paris.", "thought": True},
                     {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
                      "thoughtSignature": encrypt(TURN1_REASONING)}]
        else:
            parts = [{"text": answer_from(prompt)}]
        return Reply(status=200, body={"responseId": f"gem{next(self._ids):05d}",
                            "candidates": [{"content": {"role": "model", "parts": parts}}],
                            "usageMetadata": {"promptTokenCount": count(prompt),
                                              "candidatesTokenCount": 3, "thoughtsTokenCount": 20}})
