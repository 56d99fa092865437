"""The direct transport's per-attempt call: kwargs in, the parser's response dict out (or a typed error).

It takes the place of ``litellm.completion`` in the client, so the client's retry controllers,
timeout retry, key rotation, attempt log and redaction apply to it unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from capplan.executor.direct import pool
from capplan.executor.direct.request import RequestMapper
from capplan.executor.direct.response import failure, not_json, success
from capplan.executor.errors import ProviderConnectionError, ProviderTimeoutError
from capplan.executor.plan import Plan


class DirectCompletion:
    """``completion(**kwargs)`` for one plan's OpenAI-compatible route, over kept-alive pooled connections."""

    def __init__(self, plan: Plan, env: Mapping[str, str]) -> None:
        self.mapper = RequestMapper(plan, env)
        self.provider = self.mapper.wire.provider

    def __call__(self, **kwargs: Any) -> dict[str, Any]:
        request = self.mapper.map(kwargs)
        try:
            response = pool.send(request.url, request.content(), request.headers, request.timeout_s)
        except pool.WireTimeout as exc:
            waited = request.timeout_s if request.timeout_s is not None else pool.DEFAULT_TIMEOUT_S
            raise ProviderTimeoutError(f"{self.provider}: no answer within {waited}s ({exc})") from exc
        except pool.WireBroken as exc:
            # a refused or dropped connection, a body cut short: litellm's APIConnectionError
            raise ProviderConnectionError(f"{self.provider}: connection failed: {exc}") from exc
        status = response.status_code
        raw = response.content
        if not 200 <= status < 300:
            raise failure(status, raw.decode("utf-8", "replace"), response, self.provider)
        try:
            data = json.loads(raw)  # bytes: JSON is UTF-8, so no charset detection on the way
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            where = f"{exc.msg} at character {exc.pos}" if isinstance(exc, json.JSONDecodeError) else exc.reason
            at_start = isinstance(exc, json.JSONDecodeError) and exc.pos == 0
            raise not_json(status, raw, where, at_start, response, self.provider) from None
        return success(data, response.headers, status, response, self.provider)
