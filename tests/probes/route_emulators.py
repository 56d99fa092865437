"""Loopback routes that answer reasoning replay and prompt caching as providers do (for the probe tests).

Each is a responder for :class:`~tests.fake_provider.FakeProvider` (chat completions). Token counts
are what a tokenizer-free server can honestly report: the characters the model would read, over
four. Error texts are the providers' public ones, each with where it was seen:

- :func:`replay_route` ``"consume"`` reads ``reasoning_content`` from every assistant turn (a chat
  template that renders it), ``"ignore"`` accepts and drops it, ``"reject"`` refuses any message
  carrying it, as DeepSeek's first reasoner did (its text, quoted in Euyug/Mirai-Gpt-Plugin#4,
  2025-01-31), ``"require"`` refuses an assistant tool-call turn without it, as DeepSeek's thinking
  mode does (the conformance corpus rule ``deepseek.reasoning_content_missing``; continuedev/continue#9606).
- :class:`CacheRoute` caches a prompt prefix of at least 1024 tokens (OpenAI's minimum) and
  reports ``prompt_tokens_details.cached_tokens`` on the repeat (``input_tokens_details`` on the
  Responses API, whose prefix is ``instructions``), in 128-token steps as OpenAI does;
  ``honour=False`` never caches (``cached_tokens: 0``); ``relay_markers`` adds breakpoints of a
  relay's own and refuses over four with Anthropic's text (corpus rule ``anthropic.cache_breakpoints``).
"""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any, Literal

from tests.fake_provider import Request, chat_completion, error_body, responses_object

#: DeepSeek's first reasoner, refusing replayed reasoning (Euyug/Mirai-Gpt-Plugin#4)
DEEPSEEK_REFUSES = ("The reasoning_content is an intermediate result for display purposes only and will not be "
                    "included in the context for inference. Please remove the reasoning_content from your message "
                    "to reduce network traffic.")
#: DeepSeek's thinking mode, requiring it on a tool-call turn (corpus rule deepseek.reasoning_content_missing)
DEEPSEEK_REQUIRES = ("Missing `reasoning_content` field in the assistant message at message index {index}. For more "
                     "information, please refer to https://api-docs.deepseek.com/guides/thinking_mode#tool-calls")
#: Anthropic's breakpoint limit (corpus rule anthropic.cache_breakpoints)
TOO_MANY_BREAKPOINTS = "A maximum of 4 blocks with cache_control may be provided. Found {count}."
#: OpenAI caches prompts of at least this many tokens, in steps of 128
CACHE_MIN_TOKENS = 1024
CACHE_STEP = 128

ReplayMode = Literal["consume", "ignore", "reject", "require"]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _message_chars(message: dict[str, Any], *, read_reasoning: bool) -> int:
    chars = len(_text(message.get("content")))
    for call in message.get("tool_calls") or []:
        chars += len(json.dumps(call.get("function", {}), sort_keys=True))
    if read_reasoning and isinstance(message.get("reasoning_content"), str):
        chars += len(message["reasoning_content"])
    return chars


def _answer(prompt_tokens: int, cached: int | None = None) -> tuple[int, dict[str, Any]]:
    usage: dict[str, Any] = {"prompt_tokens": prompt_tokens, "completion_tokens": 1, "total_tokens": prompt_tokens + 1}
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    return 200, chat_completion("OK", usage=usage)


def replay_route(mode: ReplayMode) -> Any:
    """A chat route that does ``mode`` with replayed ``reasoning_content``."""

    def respond(request: Request) -> tuple[int, dict[str, Any]] | None:
        body = request.body if isinstance(request.body, dict) else {}
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        for index, message in enumerate(messages):
            if message.get("role") != "assistant":
                continue
            carried = "reasoning_content" in message
            if mode == "reject" and carried:
                return 400, error_body(DEEPSEEK_REFUSES)
            if mode == "require" and message.get("tool_calls") and not carried:
                return 400, error_body(DEEPSEEK_REQUIRES.format(index=index))
        read = mode in ("consume", "require")
        chars = sum(_message_chars(m, read_reasoning=read) for m in messages)
        return _answer(max(1, chars // 4))

    return respond


class CacheRoute:
    """A chat route with OpenAI-style automatic prompt caching of the system prefix (or none)."""

    def __init__(self, *, honour: bool = True, relay_markers: int = 0) -> None:
        self.honour = honour
        self.relay_markers = relay_markers
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, request: Request) -> tuple[int, dict[str, Any]] | None:
        body = request.body if isinstance(request.body, dict) else {}
        if request.path.endswith("/responses"):
            return self._responses(body)
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        markers = sum(1 for m in messages for part in (m.get("content") if isinstance(m.get("content"), list) else [])
                      if isinstance(part, dict) and part.get("cache_control") is not None)
        if markers and markers + self.relay_markers > 4:
            return 400, error_body(TOO_MANY_BREAKPOINTS.format(count=markers + self.relay_markers))
        prefix = _text(messages[0].get("content")) if messages and messages[0].get("role") == "system" else ""
        prompt = max(1, sum(_message_chars(m, read_reasoning=False) for m in messages) // 4)
        return _answer(prompt, self._cached(prefix))

    def _cached(self, prefix: str) -> int:
        """Tokens of ``prefix`` read from the cache: all of them (in whole steps) when seen before."""
        if not self.honour or len(prefix) // 4 < CACHE_MIN_TOKENS:
            return 0
        digest = hashlib.sha256(prefix.encode("utf-8")).hexdigest()
        with self._lock:
            seen = digest in self._seen
            self._seen.add(digest)
        return (len(prefix) // 4) // CACHE_STEP * CACHE_STEP if seen else 0

    def _responses(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        prefix = body.get("instructions") if isinstance(body.get("instructions"), str) else ""
        answer = responses_object("OK")
        prompt = max(1, (len(prefix) + len(str(body.get("input", "")))) // 4)
        answer["usage"] = {"input_tokens": prompt, "output_tokens": 1, "total_tokens": prompt + 1,
                           "input_tokens_details": {"cached_tokens": self._cached(prefix)}}
        return 200, answer
