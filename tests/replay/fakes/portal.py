"""A Portal-like gateway: a model catalogue, and chat requests that land on the OpenRouter lane
(``gen-`` ids, ``usage.cost``) or a direct upstream (``chatcmpl-`` ids) per a lane schedule.

The key is rotated by the "installer": the first request with the old key gets a 401 and
auth.json is rewritten with the new key, as a live install does.
"""

from __future__ import annotations

import itertools
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .chat import ChatProvider
from tests.fake_provider import Reply, Request

CATALOG = [
    {"id": "x-ai/grok-4.7", "pricing": {"prompt": "0.000003", "completion": "0.000015"},
     "architecture": {"output_modalities": ["text"]}, "supported_parameters": ["reasoning", "tools"]},
    {"id": "z-ai/glm-5.3", "pricing": {"prompt": "0.0000006", "completion": "0.0000022"},
     "architecture": {"output_modalities": ["text"]}, "supported_parameters": ["reasoning", "tools"]},
    {"id": "qwen/qwen3.8-plus", "pricing": {"prompt": "0.0000004", "completion": "0.0000012"},
     "architecture": {"output_modalities": ["text"]}, "supported_parameters": ["include_reasoning"]},
    {"id": "~x-ai/grok-latest", "pricing": {"prompt": "0.000003", "completion": "0.000015"},
     "architecture": {"output_modalities": ["text"]}, "supported_parameters": ["reasoning"]},
    {"id": "z-ai/glm-5.3:batch", "pricing": {"prompt": "0.0000003", "completion": "0.0000011"},
     "architecture": {"output_modalities": ["text"]}, "supported_parameters": ["reasoning"]},
    {"id": "google/imagen-5", "pricing": {"prompt": "0.00001", "completion": "0.00004"},
     "architecture": {"output_modalities": ["image"]}, "supported_parameters": ["reasoning"]},
    {"id": "meta/llama-5-instruct", "pricing": {"prompt": "0.0000002", "completion": "0.0000002"},
     "architecture": {"output_modalities": ["text"]}, "supported_parameters": ["tools", "temperature"]},
]


@dataclass
class PortalProvider:
    auth_file: Path
    old_key: str
    new_key: str
    schedule: dict[str, list[str]] = field(default_factory=dict)  # model -> lanes, cycled
    openrouter: ChatProvider = field(default_factory=lambda: ChatProvider(
        reads=("reasoning", "reasoning_details"), id_prefix="gen-", cost=0.0001))
    direct: ChatProvider = field(default_factory=lambda: ChatProvider(
        reads=("reasoning_content",), scope="after_last_user", id_prefix="chatcmpl-"))
    rotations: int = 0
    _counters: dict[str, Any] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def handle(self, request: Request) -> Reply:
        auth = request.headers.get("authorization", "")
        if auth == f"Bearer {self.old_key}":
            with self._lock:
                self.rotations += 1
                self.auth_file.write_text(json.dumps({"providers": {"nous": {
                    "agent_key": self.new_key, "access_token": "unused-access-token-value"}}}))
            return Reply(status=401, body={"error": {"message": "agent key expired", "type": "auth"}})
        if auth != f"Bearer {self.new_key}":
            return Reply(status=401, body={"error": {"message": "unknown key", "type": "auth"}})
        if request.method == "GET":
            return Reply(status=200, body={"object": "list", "data": CATALOG})
        model = str((request.body or {}).get("model"))
        if model not in {m["id"] for m in CATALOG}:
            return Reply(status=404, body={"error": {"message": f"model {model} not found"}})
        with self._lock:
            lanes = self.schedule.get(model, ["direct"])
            counter = self._counters.setdefault(model, itertools.count())
            lane = lanes[next(counter) % len(lanes)]
        return (self.openrouter if lane == "openrouter" else self.direct).handle(request)
