"""An HTTP answer from an OpenAI-compatible route -> the response the parser reads, or a typed error.

The success shape mirrors what litellm 1.110.2 makes of the same body, because the parser and the
reasoning codecs read that shape: ``reasoning_content`` from ``reasoning_content``, else
``reasoning``, else a leading ``<think>`` block of the content; every message key litellm's
``Message`` does not know (``reasoning_details``, ...) under ``provider_specific_fields``;
``finish_reason`` ``stop`` beside tool calls reported as ``tool_calls``; the response headers under
``_hidden_params.additional_headers`` (where OpenRouter's ``x-generation-id`` is read). A failure
status becomes :class:`~capplan.executor.errors.ProviderHTTPError` (429:
:class:`~capplan.executor.errors.ProviderRateLimitError`; a context-window refusal, recognised by
the texts litellm recognises, and OpenRouter's: :class:`~capplan.executor.errors.ContextWindowExceededError`;
408: :class:`~capplan.executor.errors.ProviderRequestTimeout`, a timeout).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from capplan.executor.errors import (
    ContextWindowExceededError,
    ProviderHTTPError,
    ProviderProtocolError,
    ProviderRateLimitError,
    ProviderRequestTimeout,
)

#: litellm's ``Message`` fields; any other key of a response message is provider-specific.
MESSAGE_FIELDS = frozenset({
    "annotations", "audio", "content", "function_call", "images", "provider_specific_fields", "reasoning_content",
    "reasoning_items", "refusal", "role", "thinking_blocks", "tool_calls",
})

#: Texts litellm 1.110.2 takes for a context-window refusal (``is_error_str_context_window_exceeded``).
CONTEXT_WINDOW_TEXTS = (
    "exceed context limit",
    "this model's maximum context length is",
    "requested token count exceeds the model's maximum context length",
    "string too long. expected a string with maximum length",
    "model's maximum context limit",
    "is longer than the model's context length",
    "input tokens exceed the configured limit",
    "`inputs` tokens + `max_new_tokens` must be",
    "exceeds the available context size",
    "exceeds the maximum number of tokens allowed",
    '"code": "context_length_exceeded"',
    "prompt is too long",
)

#: Added here: OpenRouter's wording ("This endpoint's maximum context length is N tokens. However, you
#: requested about M tokens ..."), which litellm reads as a plain bad request (docs/deviations.md).
OWN_CONTEXT_WINDOW_TEXTS = ("maximum context length is",)

_THINK = re.compile(r"<(?:think|thinking|budget:thinking)>(.*?)</(?:think|thinking|budget:thinking)>(.*)", re.DOTALL)

#: How much of an error body a message quotes.
_MAX_QUOTED = 2000


def is_context_window_text(text: str) -> bool:
    """Whether an error text says the prompt does not fit (litellm's test, exclusions included)."""
    lower = text.lower()
    if "string_above_max_length" in lower or ("invalid 'user'" in lower and "string too long" in lower):
        return False
    if any(marker in lower for marker in CONTEXT_WINDOW_TEXTS + OWN_CONTEXT_WINDOW_TEXTS):
        return True
    return "current length is" in lower and "while limit is" in lower


def failure(status: int, text: str, response: object, provider: str) -> ProviderHTTPError | ProviderRequestTimeout:
    """The typed error for a non-2xx answer."""
    body: Any = None
    try:
        body = json.loads(text) if text else None
    except ValueError:
        body = None
    message = _error_message(body) or text[:_MAX_QUOTED] or "(empty body)"
    shown = f"{provider} HTTP {status}: {message}"
    if status == 408:
        return ProviderRequestTimeout(shown, status_code=status, response=response, body=body)
    if status == 429:
        return ProviderRateLimitError(shown, status_code=status, response=response, body=body)
    if status < 500 and is_context_window_text(text):
        return ContextWindowExceededError(shown, status_code=status, response=response, body=body)
    return ProviderHTTPError(shown, status_code=status, response=response, body=body)


def not_json(status: int, raw: bytes, why: str, at_start: bool, response: object, provider: str) -> ProviderHTTPError:
    """The error for a 2xx body that is not JSON.

    A body that is not JSON from its very first character (an HTML page, plain text, nothing) is
    infrastructure (:class:`ProviderProtocolError`): a provider's answer, even one cut short, starts
    as JSON. litellm reports the same decoder position (``Expecting value: line 1 column 1 (char 0)``),
    which :data:`~capplan.executor.failure_rules.LITELLM_PROTOCOL_RULES` reads, so both transports agree.
    """
    if at_start:
        problem = ("a 2xx answer that is not JSON from its first character (an HTML page: a captive portal, "
                   "a login page or a wrong base URL)")
        return ProviderProtocolError(f"{provider} HTTP {status}: {problem}", status_code=status, problem=problem,
                                     response=response)
    return ProviderHTTPError(f"{provider} HTTP {status}: the response body is not JSON ({why})",
                             status_code=status, response=response)


def _error_message(body: Any) -> str | None:
    if not isinstance(body, Mapping):
        return None
    error = body.get("error")
    if isinstance(error, Mapping):
        message = error.get("message")
        if isinstance(message, str) and message:
            return message[:_MAX_QUOTED]
        return json.dumps(error)[:_MAX_QUOTED]
    if isinstance(error, str) and error:
        return error[:_MAX_QUOTED]
    return None


def success(data: Any, headers: Mapping[str, str], status: int, response: object, provider: str) -> dict[str, Any]:
    """The parser's response dict for a 2xx body already decoded from JSON."""
    if not isinstance(data, dict):
        raise ProviderHTTPError(f"{provider} HTTP {status}: the response body is JSON but not an object",
                                status_code=status, response=response)
    if "error" in data and "choices" not in data:
        # some OpenAI-compatible servers answer a failure with 200 and an error object
        raise ProviderHTTPError(f"{provider} HTTP {status}: {_error_message(data) or 'error in response body'}",
                                status_code=status, response=response, body=data)
    if "choices" not in data:
        # a provider's success always carries choices (OpenAI's chat.completion object): whatever sent
        # this 200 is not the provider, so it is infrastructure, not a model failure and not retried
        problem = "a 200 answer with no choices: something other than the provider answered"
        raise ProviderProtocolError(f"{provider} HTTP {status}: {problem}", status_code=status, problem=problem,
                                    response=response)
    out = dict(data)
    choices = data.get("choices")
    if isinstance(choices, list):
        out["choices"] = [_choice(choice) if isinstance(choice, Mapping) else choice for choice in choices]
    out["_hidden_params"] = {"additional_headers": dict(headers)}
    return out


def _choice(choice: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(choice)
    message = choice.get("message")
    if isinstance(message, Mapping):
        out["message"] = _message(message)
        calls = out["message"].get("tool_calls")
        finish = choice.get("finish_reason")
        if finish is None:
            finish = choice.get("finish_details") or "stop"
        if finish == "stop" and calls:
            finish = "tool_calls"
        out["finish_reason"] = finish
    return out


def _message(message: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    specific = dict(message.get("provider_specific_fields") or {})
    for key, value in message.items():
        if key not in MESSAGE_FIELDS:
            specific[key] = value
    content = message.get("content")
    if "reasoning_content" in message:
        reasoning = message["reasoning_content"]
    elif "reasoning" in message:
        reasoning = message["reasoning"]
    elif isinstance(content, str) and content:
        match = _THINK.match(content)
        reasoning, content = (match.group(1), match.group(2)) if match else (None, content)
    else:
        reasoning = None
    if "thinking_blocks" in message:
        specific["thinking_blocks"] = message["thinking_blocks"]
    out["content"] = content
    out["role"] = message.get("role") or "assistant"
    out["tool_calls"] = message.get("tool_calls")
    out["function_call"] = message.get("function_call")
    out["reasoning_content"] = reasoning
    out["thinking_blocks"] = message.get("thinking_blocks")
    out["provider_specific_fields"] = specific
    if "refusal" in message:
        out["refusal"] = message["refusal"]
    return out
