"""The direct transport's per-attempt call: kwargs in, the parser's response dict out (or a typed error).

It takes the place of ``litellm.completion`` in the client, so the client's retry controllers,
timeout retry, key rotation, attempt log and redaction apply to it unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from capplan.executor.direct import pool
from capplan.executor.direct.bounded_body import BodyLimits
from capplan.executor.direct.request import RequestMapper
from capplan.executor.direct.response import failure, not_json, success
from capplan.executor.errors import (
    ProviderConnectionError,
    ProviderResponseError,
    ProviderTimeoutError,
)
from capplan.executor.plan import Plan
from capplan.executor.responses_response import chat_shape
from capplan.executor.wire_dialect import is_responses


class DirectCompletion:
    """``completion(**kwargs)`` for one plan's OpenAI-compatible route (chat or Responses), over kept-alive
    pooled connections."""

    def __init__(self, plan: Plan, env: Mapping[str, str]) -> None:
        self.mapper = RequestMapper(plan, env)
        self.provider = self.mapper.wire.provider
        binding = plan.binding.binding
        self.limits = BodyLimits(binding.max_response_bytes, binding.max_decoded_bytes)
        self._binding_key = plan.binding.key
        # a Responses answer is read into the chat shape the parser reads
        self._success = chat_shape if is_responses(self.mapper.wire.protocol) else success

    def __call__(self, **kwargs: Any) -> dict[str, Any]:
        request = self.mapper.map(kwargs)
        try:
            response = pool.send(request.url, request.content(), request.headers, request.timeout_s, self.limits)
        except pool.WireTimeout as exc:
            waited = request.timeout_s if request.timeout_s is not None else pool.DEFAULT_TIMEOUT_S
            raise ProviderTimeoutError(f"{self.provider}: no complete answer within {waited}s, the attempt's total "
                                       f"time ({exc})") from exc
        except pool.WireTooLarge as exc:
            raise ProviderResponseError(
                f"{self.provider} HTTP {exc.status}: the answer's body is larger than the binding's {exc.field} "
                f"({exc.limit} bytes); capplan stopped reading it there. If this provider's answers really are "
                f"that large, raise `{exc.field}` in the binding (an overlay's `bindings: "
                f"{self._binding_key or self.provider}: {{{exc.field}: N}}`) and recompile with `capplan compile`",
                http_status=exc.status, limit_field=exc.field, limit=exc.limit,
            ) from None
        except pool.WireBroken as exc:
            # a refused or dropped connection, a body cut short: litellm's APIConnectionError
            raise ProviderConnectionError(f"{self.provider}: connection failed: {exc}") from exc
        status = response.status_code
        raw = response.content
        if not 200 <= status < 300:
            raise failure(status, raw.decode("utf-8", "replace"), response, self.provider)
        try:
            data = json.loads(raw)  # bytes: JSON is UTF-8, so no charset detection on the way
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, an integer past Python's digit limit
            where = (f"{exc.msg} at character {exc.pos}" if isinstance(exc, json.JSONDecodeError)
                     else exc.reason if isinstance(exc, UnicodeDecodeError) else str(exc)[:200])
            at_start = isinstance(exc, json.JSONDecodeError) and exc.pos == 0
            raise not_json(status, raw, where, at_start, response, self.provider) from None
        return self._success(data, response.headers, status, response, self.provider)
