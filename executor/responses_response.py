"""A Responses API answer becomes the chat-shaped response the parser and the codecs read.

Both transports answer a Responses plan through here: the direct transport with the decoded body,
litellm's Responses API with its response object dumped to JSON. The mapping:

- ``message`` items -> the message text (their ``output_text`` parts, joined); a ``refusal`` part
  -> the message's ``refusal`` and, when the answer has no other text, its text (a refusal is the
  model's answer, not an empty one);
- ``function_call`` items -> ``tool_calls`` (``call_id`` as the call's id; the arguments string
  verbatim, so the parser's repair ladder sees what the model wrote);
- ``reasoning`` items -> ``reasoning_content`` (their summary texts), and every output item,
  verbatim and in order, under ``provider_specific_fields.responses_output`` (the
  ``openai_responses`` codec reads reasoning items and their followers there);
- ``usage`` -> chat usage: ``input_tokens`` -> ``prompt_tokens``, ``output_tokens`` ->
  ``completion_tokens``, ``input_tokens_details.cached_tokens`` and
  ``output_tokens_details.reasoning_tokens`` under the chat details, with the provider's own
  counters kept beside them (the result's ``usage.provider_raw``);
- ``status: incomplete`` -> ``finish_reason`` ``length`` (``max_output_tokens``) or
  ``content_filter``, so the length and empty retries apply; ``completed`` -> ``tool_calls`` when
  the answer called tools, else ``stop``; ``failed`` (or an ``error`` object) -> a provider error
  with the status its error code has as an HTTP answer (``server_error`` a 500, retried;
  ``rate_limit_exceeded`` a 429; a refused prompt or image a 400);
- the response id -> ``id`` (and ``provider_specific_fields.response_id``).

An output item of a type this mapping does not know is refused (:class:`UnknownOutputItemError`),
with the item quoted: it may hold what the model did (a hosted tool's call), and dropping it
would make the trial's record untrue.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from capplan.core.errors import ExitCode
from capplan.executor.errors import ProviderHTTPError, ProviderProtocolError, ProviderRateLimitError, ResponseShapeError
from capplan.executor.policies.reasoning_codec.openai_responses import OUTPUT_KEY
from capplan.executor.result import CostSource
from capplan.executor.usage import Usage

#: a failed response's error code -> the HTTP status the same failure has when it is answered as one
#: (OpenAI's ResponseError codes: the server's own failures are worth another attempt, as a 500 is;
#: a refused prompt or image is the request's, as a 400 is)
FAILED_STATUS = {"server_error": 500, "vector_store_timeout": 500, "invalid_prompt": 400, "invalid_image": 400,
                 "invalid_image_format": 400, "invalid_base64_image": 400, "invalid_image_url": 400,
                 "image_too_large": 400, "image_too_small": 400, "image_parse_error": 400,
                 "image_content_policy_violation": 400, "invalid_image_mode": 400, "image_file_too_large": 400,
                 "unsupported_image_media_type": 400, "empty_image_file": 400, "failed_to_download_image": 400,
                 "image_file_not_found": 400}

#: output item types the mapping reads
KNOWN_ITEMS = frozenset({"message", "function_call", "reasoning"})
#: how much of an unknown item an error quotes
_QUOTED = 400


class UnknownOutputItemError(ResponseShapeError):
    """A Responses answer holds an output item of a type capplan does not interpret."""

    code = "RESPONSE_ITEM"
    exit_code = ExitCode.INPUT

    def __init__(self, message: str, *, answer: Any = None) -> None:
        super().__init__(message)
        #: the whole answer, kept for the record
        self.answer = answer
        #: what the refused answer reported it used and cost (the client fills them in: the call was
        #: made and paid for, so its record must not say unknown where the provider said)
        self.usage: Usage | None = None
        self.cost_usd: float | None = None
        self.cost_source: CostSource = "unknown"

    def chat_usage(self) -> dict[str, Any] | None:
        """The answer's usage block in the chat shape the usage extractor reads."""
        return _usage(self.answer.get("usage")) if isinstance(self.answer, Mapping) else None


def chat_shape(data: Any, headers: Mapping[str, str], status: int, response: object, provider: str) -> dict[str, Any]:
    """The parser's response dict for a 2xx Responses answer already decoded from JSON."""
    if not isinstance(data, dict):
        raise ProviderHTTPError(f"{provider} HTTP {status}: the response body is JSON but not an object",
                                status_code=status, response=response)
    error = data.get("error")
    if data.get("status") == "failed" or (error and "output" not in data):
        said = error.get("message") if isinstance(error, Mapping) else error
        code = error.get("code") if isinstance(error, Mapping) else None
        shown = f"{provider} HTTP {status}: the response failed ({code or 'no code'}): {said or 'no message'}"
        # a failed response comes with 200; its error code says whether trying again can help, and the
        # retry controllers read that from the status the same failure has as an HTTP answer
        if code == "rate_limit_exceeded":
            raise ProviderRateLimitError(shown, status_code=429, response=response, body=data)
        raise ProviderHTTPError(shown, status_code=FAILED_STATUS.get(str(code), status), response=response, body=data)
    output = data.get("output")
    if not isinstance(output, list):
        problem = "a 200 answer with no output list: something other than a Responses API answered"
        raise ProviderProtocolError(f"{provider} HTTP {status}: {problem}", status_code=status, problem=problem,
                                    response=response)
    texts: list[str] = []
    refusals: list[str] = []
    calls: list[dict[str, Any]] = []
    summaries: list[str] = []
    for index, item in enumerate(output):
        kind = item.get("type") if isinstance(item, Mapping) else None
        if kind not in KNOWN_ITEMS:
            try:
                shown = json.dumps(item, ensure_ascii=False, default=str)[:_QUOTED]
            except RecursionError:  # a hostile answer nested past what can be written back out
                shown = "(nested too deeply to quote)"
            raise UnknownOutputItemError(
                f"{provider}: output[{index}] is an item of type {kind!r}, which capplan does not interpret (it reads "
                f"{', '.join(sorted(KNOWN_ITEMS))}); the answer is kept on this error, not dropped: {shown}. If the "
                "request asked for a hosted tool, remove it: capplan runs function tools only",
                answer=data)
        if kind == "message":
            for part in item.get("content") or ():
                if not isinstance(part, Mapping):
                    continue
                if part.get("type") == "output_text":
                    texts.append(str(part.get("text") or ""))
                elif part.get("type") == "refusal":
                    refusals.append(str(part.get("refusal") or ""))
        elif kind == "function_call":
            arguments = item.get("arguments")
            calls.append({"id": str(item.get("call_id") or item.get("id") or ""), "type": "function",
                          "function": {"name": item.get("name"),
                                       "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)}})
        else:
            summaries += [str(part.get("text") or "") for part in item.get("summary") or ()
                          if isinstance(part, Mapping)]
    text = "".join(texts)
    specific: dict[str, Any] = {OUTPUT_KEY: output, "response_id": data.get("id")}
    message: dict[str, Any] = {
        "role": "assistant",
        "content": text or ("".join(refusals) if refusals else None),
        "tool_calls": calls or None,
        "function_call": None,
        "reasoning_content": "\n\n".join(s for s in summaries if s) or None,
        "thinking_blocks": None,
        "provider_specific_fields": specific,
    }
    if refusals:
        message["refusal"] = "".join(refusals)
    return {
        "id": data.get("id"),
        "object": "chat.completion",
        "created": data.get("created_at"),
        "model": data.get("model"),
        "choices": [{"index": 0, "message": message, "finish_reason": _finish(data, bool(calls))}],
        "usage": _usage(data.get("usage")),
        "_hidden_params": {"additional_headers": dict(headers)},
    }


def _finish(data: Mapping[str, Any], called: bool) -> str:
    if data.get("status") == "incomplete":
        details = data.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, Mapping) else None
        return "content_filter" if reason == "content_filter" else "length"
    return "tool_calls" if called else "stop"


def _usage(usage: Any) -> dict[str, Any] | None:
    # the provider's own counters stay beside the chat names: the usage extractor reads the chat
    # names and keeps the whole block verbatim (``provider_raw``), so what OpenAI reported is recorded
    if not isinstance(usage, Mapping):
        return None
    out: dict[str, Any] = {**usage, "prompt_tokens": usage.get("input_tokens"),
                           "completion_tokens": usage.get("output_tokens"), "total_tokens": usage.get("total_tokens")}
    input_details = usage.get("input_tokens_details")
    if isinstance(input_details, Mapping) and "cached_tokens" in input_details:
        out["prompt_tokens_details"] = {"cached_tokens": input_details.get("cached_tokens")}
    output_details = usage.get("output_tokens_details")
    if isinstance(output_details, Mapping) and "reasoning_tokens" in output_details:
        out["completion_tokens_details"] = {"reasoning_tokens": output_details.get("reasoning_tokens")}
    return out
