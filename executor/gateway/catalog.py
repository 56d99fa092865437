"""``GET {base}/models``: which route names a gateway serves, read once per base URL.

The cache is process-wide and shared by every client, keyed by base URL: a catalog changes when
an operator edits the gateway, not within a run. Only a successful, non-empty read is cached;
a failure is remembered for a short cooldown so a hanging gateway costs its timeout now and
then rather than at every client construction. ``None`` means "unreadable", and an empty
catalog counts as unreadable: a gateway that serves nothing is broken, not authoritative.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable

from executor.gateway.config import GatewayConfig

log = logging.getLogger(__name__)

#: Seconds before an unreadable catalog is asked for again.
RETRY_COOLDOWN_S = 60.0
#: Seconds one catalog read may take.
FETCH_TIMEOUT_S = 15.0
#: Bounds on an untrusted answer.
_MAX_BYTES = 16 * 1024 * 1024
_MAX_ENTRIES = 100_000

_cache: dict[str, frozenset[str]] = {}
_retry_after: dict[str, float] = {}
_lock = threading.Lock()
_fetch_locks: dict[str, threading.Lock] = {}


def clear_catalog_cache() -> None:
    """Forget every cached catalog and cooldown (tests, and the `gateway check` command)."""
    with _lock:
        _cache.clear()
        _retry_after.clear()


def fetch_gateway_catalog(
    config: GatewayConfig,
    *,
    timeout: float = FETCH_TIMEOUT_S,
    clock: Callable[[], float] = time.monotonic,
) -> frozenset[str] | None:
    """The route ids the gateway serves, or None when the catalog cannot be read.

    The request carries the gateway key and the same attribution headers a call sends, so a
    gateway that admits callers by header answers the catalog read too.
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
        served, problem = _read(config, timeout)
        with _lock:
            if served is None:
                _retry_after[key] = clock() + RETRY_COOLDOWN_S
            else:
                _retry_after.pop(key, None)
                _cache[key] = served
    if served is None:
        log.warning("gateway catalog at %s/models is unreadable (%s); keeping the gateway with untranslated names",
                    config.base_url, problem)
    return served


def _read(config: GatewayConfig, timeout: float) -> tuple[frozenset[str] | None, str]:
    # return_wildcard_routes: a LiteLLM proxy otherwise expands a deployment like "anthropic/*"
    # into every id in litellm's own map, which would present a wildcard as exact evidence
    url = f"{config.base_url}/models?return_wildcard_routes=true"
    headers = {"Accept": "application/json", **config.request_headers()}
    if config.api_key:
        headers["Authorization"] = f"Bearer {config.api_key}"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout) as response:  # noqa: S310 - operator-configured URL
            raw = response.read(_MAX_BYTES + 1)
    except urllib.error.HTTPError as exc:
        return None, f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return None, type(exc).__name__ + (f": {exc.reason}" if isinstance(exc, urllib.error.URLError) else "")
    if len(raw) > _MAX_BYTES:
        return None, f"answer larger than {_MAX_BYTES} bytes"
    try:
        payload = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None, "answer is not JSON"
    entries = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(entries, list):
        return None, "answer has no 'data' list"
    ids = [e["id"] for e in entries[:_MAX_ENTRIES] if isinstance(e, dict) and isinstance(e.get("id"), str) and e["id"]]
    if not ids:
        return None, "the catalog is empty"
    return frozenset(ids), ""
