"""A small OpenAI-chat emulator for the runner's tests: two checks, answers like the chat API.

Test infrastructure only (the shipped emulators live in ``capplan.conformance.emulators``): the
runner's tests must not wait on them, and must not change when their rules do.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any, ClassVar

from capplan.conformance.corpus import Corpus, Rule, Source
from capplan.conformance.emulator import Check, Emulator, Reply

_ids = itertools.count()


def _temperature_is(emulator: Emulator, body: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any] | None:
    if "temperature" in body and body["temperature"] == params["value"]:
        return {"value": body["temperature"]}
    return None


def _reasoning_replayed(emulator: Emulator, body: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any] | None:
    """An assistant tool-call message without ``reasoning_content`` (a thinking model's replay)."""
    for index, message in enumerate(body.get("messages") or ()):
        if message.get("role") == "assistant" and message.get("tool_calls") and not message.get("reasoning_content"):
            return {"index": index}
    return None


class ToyChat(Emulator):
    protocol: ClassVar[str] = "openai-chat"
    checks: ClassVar[Mapping[str, Check]] = {"temperature_is": _temperature_is, "reasoning_replayed": _reasoning_replayed}

    def model_of(self, path: str, body: Mapping[str, Any]) -> str | None:
        model = body.get("model")
        return model if isinstance(model, str) else None

    def success(self, path: str, body: Mapping[str, Any], model: str, reply: Reply) -> tuple[int, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": None if reply.tool_calls else reply.text}
        if reply.tool_calls:
            import json

            message["tool_calls"] = [{"id": f"call_{next(_ids)}", "type": "function",
                                      "function": {"name": name, "arguments": json.dumps(args)}}
                                     for name, args in reply.tool_calls]
        message["reasoning_content"] = reply.reasoning
        return 200, {"id": f"chatcmpl-{next(_ids)}", "object": "chat.completion", "model": model,
                     "choices": [{"index": 0, "message": message,
                                  "finish_reason": "tool_calls" if reply.tool_calls else "stop"}],
                     "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


SOURCE = Source(url="https://example.invalid/toy", observed="2026-01-01", note="a test rule")  # type: ignore[arg-type]

TEMPERATURE = Rule(id="toy.temperature_zero", title="temperature 0 refused", protocol="openai-chat", routes=("openai",),
                   models=("gpt-5*",), check="temperature_is", params={"value": 0}, status=400,
                   error={"error": {"message": "Unsupported value: 'temperature' does not support {value} with this model.",
                                    "type": "invalid_request_error"}}, sources=(SOURCE,))
REPLAY = Rule(id="toy.reasoning_replay", title="reasoning must be replayed", protocol="openai-chat", routes=("openrouter",),
              models=("moonshotai/kimi-*",), check="reasoning_replayed", status=400,
              error={"error": {"message": "thinking is enabled but reasoning_content is missing in assistant tool call "
                                          "message at index {index}"}}, sources=(SOURCE,))
OTHER = Rule(id="toy.other_route", title="never applies to the bundled plans", protocol="openai-chat", routes=("vllm",),
             check="temperature_is", params={"value": 7}, status=400, error={"error": {"message": "never"}},
             sources=(SOURCE,))

NEVER = Rule(id="toy.never_sent", title="a value no scenario sends", protocol="openai-chat", routes=("openai",),
             models=("gpt-4o",), check="temperature_is", params={"value": 7}, status=400,
             error={"error": {"message": "never"}}, sources=(SOURCE,))

CORPUS = Corpus((TEMPERATURE, REPLAY, OTHER, NEVER), ["toy"])
EMULATORS = {"openai-chat": ToyChat}
