"""``GET {base}/models``: which route names a gateway serves, read once per base URL.

The cache is process-wide and shared by every client, keyed by base URL: a catalog changes when
an operator edits the gateway, not within a run. Only a successful, non-empty read is cached;
a failure is remembered for a short cooldown so a hanging gateway costs its timeout now and
then rather than at every client construction. ``None`` means "unreadable", and an empty
catalog counts as unreadable: a gateway that serves nothing is broken, not authoritative.

The read is bounded as a whole, not per socket operation: a server that trickles a byte every
few seconds never trips a socket timeout, so connect, headers, redirects and body share one
deadline (:data:`FETCH_TIMEOUT_S`), enforced from outside the thread that reads. The request
carries the gateway key, so a redirect is followed only within the base URL's own origin; one
to another origin is refused rather than handed the key.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

from capplan.executor.gateway.config import GatewayConfig

log = logging.getLogger(__name__)

#: Seconds before an unreadable catalog is asked for again.
RETRY_COOLDOWN_S = 60.0
#: Seconds the whole catalog read may take: connecting, every redirect, headers and body.
FETCH_TIMEOUT_S = 15.0
#: Same-origin redirects followed before the read is given up.
MAX_REDIRECTS = 3
#: Bounds on an untrusted answer.
_MAX_BYTES = 16 * 1024 * 1024
_MAX_ENTRIES = 100_000
_REDIRECTS = frozenset({301, 302, 303, 307, 308})

_cache: dict[str, frozenset[str]] = {}
_retry_after: dict[str, float] = {}
_lock = threading.Lock()
_fetch_locks: dict[str, threading.Lock] = {}


@dataclass(frozen=True)
class CatalogRead:
    """One read of the catalog: the route ids served, or why there are none."""

    served: frozenset[str] | None
    #: Why ``served`` is None, one line without any credential; "" when it is not.
    problem: str = ""
    #: Whether the gateway refused the credentials (HTTP 401 or 403).
    refused: bool = False


def clear_catalog_cache() -> None:
    """Forget every cached catalog and cooldown (tests, and the `gateway check` command)."""
    with _lock:
        _cache.clear()
        _retry_after.clear()


def fetch_gateway_catalog(
    config: GatewayConfig,
    *,
    timeout: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> frozenset[str] | None:
    """The route ids the gateway serves, or None when the catalog cannot be read.

    The request carries the gateway key and the same attribution headers a call sends, so a
    gateway that admits callers by header answers the catalog read too. ``timeout`` bounds the
    whole read (default :data:`FETCH_TIMEOUT_S`, read when called).
    """
    key = config.base_url
    with _lock:
        if key in _cache:
            return _cache[key]
        if clock() < _retry_after.get(key, 0.0):
            return None
        fetch_lock = _fetch_locks.setdefault(key, threading.Lock())
    with fetch_lock:  # clients built concurrently share one read
        with _lock:
            if key in _cache:
                return _cache[key]
            if clock() < _retry_after.get(key, 0.0):
                return None
        read = read_gateway_catalog(config, timeout=timeout)
        with _lock:
            if read.served is None:
                _retry_after[key] = clock() + RETRY_COOLDOWN_S
            else:
                _retry_after.pop(key, None)
                _cache[key] = read.served
    if read.served is None:
        log.warning("gateway catalog at %s/models is unreadable (%s); keeping the gateway with untranslated names",
                    config.base_url, read.problem)
    return read.served


def read_gateway_catalog(config: GatewayConfig, *, timeout: float | None = None) -> CatalogRead:
    """Read the catalog now (no cache), within ``timeout`` seconds in all (default :data:`FETCH_TIMEOUT_S`).

    The read runs on a daemon thread that this call waits for at most ``timeout``: a read still
    blocked then is abandoned (it stops at its next chunk, or at its socket timeout).
    """
    import httpx  # noqa: F401 - imported before the clock starts: a cold import is not the gateway's time

    deadline_s = FETCH_TIMEOUT_S if timeout is None else timeout
    outcome: list[CatalogRead] = []
    deadline = time.monotonic() + deadline_s

    overdue = f"no complete answer within {deadline_s:g} s"

    def work() -> None:
        try:
            outcome.append(_read(config, deadline))
        except Exception as exc:  # noqa: BLE001 - any failure of the read is "unreadable", reported by kind
            late = isinstance(exc, _Overdue) or time.monotonic() >= deadline
            outcome.append(CatalogRead(None, overdue if late else _describe(exc)))

    worker = threading.Thread(target=work, name="gateway-catalog", daemon=True)
    worker.start()
    worker.join(max(0.0, deadline - time.monotonic()) + 0.05)
    return outcome[0] if outcome else CatalogRead(None, overdue)


class _Overdue(Exception):
    """The deadline passed between two chunks of the answer."""


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), parts.port or default


def _read(config: GatewayConfig, deadline: float) -> CatalogRead:
    import httpx  # a dependency of litellm; imported here so importing capplan stays fast

    # return_wildcard_routes: a LiteLLM proxy otherwise expands a deployment like "anthropic/*"
    # into every id in litellm's own map, which would present a wildcard as exact evidence
    url = f"{config.base_url}/models?return_wildcard_routes=true"
    origin = _origin(url)
    # identity: a compressed answer could inflate far past the byte bound in one chunk
    headers = {"Accept": "application/json", "Accept-Encoding": "identity", **config.request_headers()}
    if config.api_key:
        headers["Authorization"] = f"Bearer {config.api_key}"

    def remaining() -> float:
        left = deadline - time.monotonic()
        if left <= 0:
            raise _Overdue
        return left

    # redirects are never followed by the client: each is checked here against the origin first
    with httpx.Client(follow_redirects=False, timeout=httpx.Timeout(remaining())) as client:
        for _ in range(MAX_REDIRECTS + 1):
            with client.stream("GET", url, headers=headers, timeout=httpx.Timeout(remaining())) as response:
                status = response.status_code
                if status in _REDIRECTS:
                    location = response.headers.get("location")
                    if not location:
                        return CatalogRead(None, f"HTTP {status} redirect without a Location")
                    target = urljoin(url, location)
                    if _origin(target) != origin:
                        return CatalogRead(
                            None, f"HTTP {status} redirect to another origin, not followed: the request carries the "
                                  f"gateway's credentials, which are sent only to LLM_PROXY_BASE_URL's origin")
                    url = target
                    continue
                if status in (401, 403):
                    return CatalogRead(None, f"HTTP {status}: the gateway refused the credentials "
                                             f"(LLM_PROXY_API_KEY or LLM_PROXY_HEADERS)", refused=True)
                if status != 200:
                    return CatalogRead(None, f"HTTP {status}")
                declared = response.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > _MAX_BYTES:
                    return CatalogRead(None, f"answer larger than {_MAX_BYTES} bytes")
                chunks: list[bytes] = []
                size = 0
                for chunk in response.iter_bytes():
                    remaining()
                    chunks.append(chunk)
                    size += len(chunk)
                    if size > _MAX_BYTES:
                        return CatalogRead(None, f"answer larger than {_MAX_BYTES} bytes")
                return _parse(b"".join(chunks))
    return CatalogRead(None, f"more than {MAX_REDIRECTS} redirects")


def _parse(raw: bytes) -> CatalogRead:
    try:
        payload: Any = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError, ValueError):
        return CatalogRead(None, "answer is not JSON")
    entries = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(entries, list):
        return CatalogRead(None, "answer has no 'data' list")
    ids = [e["id"] for e in entries[:_MAX_ENTRIES] if isinstance(e, dict) and isinstance(e.get("id"), str) and e["id"]]
    if not ids:
        return CatalogRead(None, "the catalog is empty")
    return CatalogRead(frozenset(ids))


def _describe(exc: BaseException) -> str:
    """A failure by kind; the text of transport errors names the host at most, never a header."""
    text = str(exc).splitlines()[0][:200] if str(exc) else ""
    return type(exc).__name__ + (f": {text}" if text else "")
