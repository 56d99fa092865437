"""The direct transport's per-attempt call: kwargs in, the parser's response dict out (or a typed error).

It takes the place of ``litellm.completion`` in the client, so the client's retry controllers,
timeout retry, key rotation, attempt log and redaction apply to it unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx

from capplan.executor.direct.pool import client_for
from capplan.executor.direct.request import RequestMapper
from capplan.executor.direct.response import failure, success
from capplan.executor.errors import ProviderConnectionError, ProviderHTTPError, ProviderTimeoutError
from capplan.executor.plan import Plan


class DirectCompletion:
    """``completion(**kwargs)`` for one plan's OpenAI-compatible route, over a pooled HTTP client."""

    def __init__(self, plan: Plan, env: Mapping[str, str]) -> None:
        self.mapper = RequestMapper(plan, env)
        self.provider = self.mapper.wire.provider

    def __call__(self, **kwargs: Any) -> dict[str, Any]:
        request = self.mapper.map(kwargs)
        http = client_for(request.url)
        timeout = httpx.Timeout(request.timeout_s) if request.timeout_s is not None else httpx.USE_CLIENT_DEFAULT
        try:
            response = http.post(request.url, content=request.content(), headers=request.headers, timeout=timeout)
        except httpx.TimeoutException as exc:
            raise ProviderTimeoutError(f"{self.provider}: no answer within {request.timeout_s}s ({type(exc).__name__})") from exc
        except (httpx.TransportError, httpx.DecodingError) as exc:
            # a refused or dropped connection, a body cut short: litellm's APIConnectionError
            raise ProviderConnectionError(f"{self.provider}: connection failed: {type(exc).__name__}: {exc}") from exc
        status = response.status_code
        text = response.text
        if not 200 <= status < 300:
            raise failure(status, text, response, self.provider)
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ProviderHTTPError(
                f"{self.provider} HTTP {status}: the response body is not JSON ({exc.msg} at character {exc.pos})",
                status_code=status, response=response,
            ) from None
        return success(data, response.headers, status, response, self.provider)
