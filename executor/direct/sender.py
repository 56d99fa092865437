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
        self._timeouts: dict[float, httpx.Timeout] = {}

    def _timeout(self, seconds: float | None) -> Any:
        if seconds is None:
            return httpx.USE_CLIENT_DEFAULT
        found = self._timeouts.get(seconds)
        if found is None:  # one per distinct value: the plan's per-attempt timeout, in practice one
            found = self._timeouts.setdefault(seconds, httpx.Timeout(seconds))
        return found

    def __call__(self, **kwargs: Any) -> dict[str, Any]:
        request = self.mapper.map(kwargs)
        http = client_for(request.url)
        timeout = self._timeout(request.timeout_s)
        try:
            response = http.post(request.url, content=request.content(), headers=request.headers, timeout=timeout)
        except httpx.TimeoutException as exc:
            raise ProviderTimeoutError(f"{self.provider}: no answer within {request.timeout_s}s ({type(exc).__name__})") from exc
        except (httpx.TransportError, httpx.DecodingError) as exc:
            # a refused or dropped connection, a body cut short: litellm's APIConnectionError
            raise ProviderConnectionError(f"{self.provider}: connection failed: {type(exc).__name__}: {exc}") from exc
        status = response.status_code
        raw = response.content
        if not 200 <= status < 300:
            raise failure(status, raw.decode("utf-8", "replace"), response, self.provider)
        try:
            data = json.loads(raw)  # bytes: JSON is UTF-8, so no charset detection on the way
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            where = f"{exc.msg} at character {exc.pos}" if isinstance(exc, json.JSONDecodeError) else exc.reason
            raise ProviderHTTPError(
                f"{self.provider} HTTP {status}: the response body is not JSON ({where})",
                status_code=status, response=response,
            ) from None
        return success(data, response.headers, status, response, self.provider)
