"""The tolokaforge side of ``upstream_compare.py``; runs under the interpreter that has tolokaforge.

It never imports capplan. It reads one JSON command per line on stdin and answers one JSON line
on the protocol channel (the original stdout; the engine's own log lines are sent to stderr). A
request is built exactly as ``LLMClient.generate`` builds it, stopping at the litellm call: the
client's completion hook raises with the kwargs it was handed, so nothing is sent.

Commands:
  {"op": "setup", "models": {key: run-config model block}, "tools": [...], "system": str}
  {"op": "time", "what": "client" | "first" | "steady" | "history", "model": key,
   "tools": n, "history": [message dicts], "new": [message dicts], "repeat": n}
      -> {"seconds": median seconds per call}
  {"op": "kwargs", "model": key, "tools": n, "history": [...]} -> {"kwargs": ...}
  {"op": "resolve", "overlay": path, "models": [[provider, name], ...]}
      -> {"seconds": time to resolve every model's capabilities with that overlay installed}
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import sys
import time
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
for _var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "OPENROUTER_API_KEY", "XAI_API_KEY"):
    os.environ.setdefault(_var, "sk-benchmark")

_PROTOCOL = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)  # the engine logs to stdout; keep the protocol channel clean

from tolokaforge.core.llm.client import LLMClient  # noqa: E402
from tolokaforge.core.models.model_config import ModelConfig  # noqa: E402
from tolokaforge.core.models.trajectory import Message, ToolCall  # noqa: E402


class _Captured(BaseException):
    """Carries the kwargs out of the client at the point it would call litellm."""


def _capture(kwargs: dict[str, Any], single_attempt: bool = False) -> Any:
    raise _Captured(kwargs)


def to_message(msg: dict[str, Any]) -> Message:
    """The engine's message for one capplan request message."""
    calls = [
        ToolCall(id=c["id"], name=c["function"]["name"], arguments=json.loads(c["function"]["arguments"]))
        for c in msg.get("tool_calls") or []
    ]
    return Message(
        role=msg["role"],
        content=msg.get("content") or "",
        tool_calls=calls or None,
        tool_call_id=msg.get("tool_call_id"),
    )


class Worker:
    def __init__(self) -> None:
        self.configs: dict[str, ModelConfig] = {}
        self.tools: list[dict[str, Any]] = []
        self.system = ""

    def setup(self, cmd: dict[str, Any]) -> dict[str, Any]:
        self.configs = {key: ModelConfig(**block) for key, block in cmd["models"].items()}
        self.tools = cmd["tools"]
        self.system = cmd["system"]
        for config in self.configs.values():
            LLMClient(config)  # the engine resolves its presets on the first client
        return {"ok": True}

    def client(self, key: str) -> LLMClient:
        client = LLMClient(self.configs[key])
        client._call_completion_with_timeout_retry = _capture  # type: ignore[method-assign]
        return client

    def build(self, client: LLMClient, messages: list[Message], tools: int) -> dict[str, Any]:
        try:
            client._generate_once(
                system=self.system,
                messages=messages,
                tools=self.tools[:tools] or None,
                tool_choice=None,
                temperature=None,
                seed=None,
                reasoning=None,
                top_p=None,
                max_tokens=None,
                session_id=None,
            )
        except _Captured as captured:
            kwargs: dict[str, Any] = captured.args[0]
            return kwargs
        raise RuntimeError("the client returned without reaching litellm")

    def time(self, cmd: dict[str, Any]) -> dict[str, Any]:
        what, key, tools, repeat = cmd["what"], cmd["model"], cmd["tools"], cmd["repeat"]
        gc.collect()  # as capplan's side does: no garbage of an earlier measure is collected inside this one
        samples: list[float] = []
        if what == "client":
            config = self.configs[key]
            for _ in range(repeat):
                start = time.perf_counter()
                LLMClient(config)
                samples.append(time.perf_counter() - start)
            return {"seconds": statistics.median(samples)}
        history = [to_message(m) for m in cmd["history"]]
        if what == "first":
            for _ in range(repeat):
                client = self.client(key)
                start = time.perf_counter()
                self.build(client, history, tools)
                samples.append(time.perf_counter() - start)
        elif what == "steady":
            client = self.client(key)
            self.build(client, history, tools)
            copies = [[to_message(m) for m in cmd["history"]] for _ in range(repeat)]
            for messages in copies:
                start = time.perf_counter()
                self.build(client, messages, tools)
                samples.append(time.perf_counter() - start)
        elif what == "history":
            client = self.client(key)
            self.build(client, history, tools)
            for _ in range(repeat):
                start = time.perf_counter()
                turn = history + [to_message(m) for m in cmd["new"]]
                self.build(client, turn, tools)
                samples.append(time.perf_counter() - start)
        else:
            raise ValueError(f"unknown measure {what!r}")
        return {"seconds": statistics.median(samples)}

    def resolve(self, cmd: dict[str, Any]) -> dict[str, Any]:
        """The engine's counterpart of compiling: install the overlay, resolve each model's capabilities."""
        from tolokaforge.core.llm.presets import build_capabilities, set_overlay_path

        start = time.perf_counter()
        set_overlay_path(cmd["overlay"])
        for provider, name in cmd["models"]:
            build_capabilities(name, provider)
        seconds = time.perf_counter() - start
        set_overlay_path(None)
        return {"seconds": seconds}

    def kwargs(self, cmd: dict[str, Any]) -> dict[str, Any]:
        built = self.build(self.client(cmd["model"]), [to_message(m) for m in cmd["history"]], cmd["tools"])
        return {"kwargs": json.loads(json.dumps(built, default=repr))}


def main() -> None:
    worker = Worker()
    handlers = {"setup": worker.setup, "time": worker.time, "kwargs": worker.kwargs, "resolve": worker.resolve}
    for line in sys.stdin:
        cmd = json.loads(line)
        try:
            answer = handlers[cmd["op"]](cmd)
        except Exception as exc:  # reported to the parent, which stops with the message
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        _PROTOCOL.write(json.dumps(answer) + "\n")


if __name__ == "__main__":
    main()
