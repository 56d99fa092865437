"""The gateway transport, read once per client from seven ``LLM_PROXY_*`` variables.

Setting ``LLM_PROXY_BASE_URL`` turns the gateway on; the others are optional companions. Values
come from the process environment, then from a ``.env`` file in the working directory (the
environment wins). Every malformed value, and every companion set while the base URL is empty,
raises :class:`GatewayConfigError` naming the variable when the client is built: a typo must
never run a whole evaluation straight at the providers with unattributed spend.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from executor.errors import ExecutorError
from executor.gateway.secret_refs import SecretReferenceError, expand_secret_refs

BASE_URL = "LLM_PROXY_BASE_URL"
API_KEY = "LLM_PROXY_API_KEY"
HEADERS = "LLM_PROXY_HEADERS"
REQUEST_ID_HEADER = "LLM_PROXY_REQUEST_ID_HEADER"
PROVIDERS = "LLM_PROXY_PROVIDERS"
PREFERRED_ROUTE = "LLM_PROXY_PREFERRED_ROUTE"
TRUST_WILDCARDS = "LLM_PROXY_TRUST_NAMESPACE_WILDCARDS"
COMPANIONS = (API_KEY, HEADERS, REQUEST_ID_HEADER, PROVIDERS, PREFERRED_ROUTE, TRUST_WILDCARDS)
VARIABLES = (BASE_URL, *COMPANIONS)

#: Providers whose litellm transport is an OpenAI-envelope ``POST {base}/chat/completions``;
#: anything else speaks its native protocol to the gateway, so it is routed only when named.
DEFAULT_ROUTED_PROVIDERS = frozenset({"openrouter", "openai"})

#: Bounds on untrusted configuration text (CI runs capplan on pull requests).
_MAX_VALUE_CHARS = 16_384
_MAX_HEADERS = 64
_TOKEN = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


class GatewayConfigError(ExecutorError):
    """An ``LLM_PROXY_*`` variable is malformed, or a companion is set without the base URL."""


@dataclass(frozen=True)
class GatewayConfig:
    """The resolved gateway settings. ``repr`` never shows the key or a header value."""

    base_url: str
    api_key: str | None = field(default=None, repr=False)
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    request_id_header: str | None = None
    providers: frozenset[str] | None = None
    preferred_routes: tuple[str, ...] = ()
    trust_namespace_wildcards: bool = False
    #: Header names whose value came (wholly or partly) from a ``${secret:NAME}`` reference.
    secret_headers: frozenset[str] = frozenset()

    @property
    def routed_providers(self) -> frozenset[str]:
        """The allow-list in force: ``LLM_PROXY_PROVIDERS`` or the default."""
        return self.providers if self.providers is not None else DEFAULT_ROUTED_PROVIDERS

    def request_headers(self) -> dict[str, str]:
        """This request's gateway headers: the static ones plus a fresh UUID4 request id."""
        headers = dict(self.headers)
        if self.request_id_header:
            headers[self.request_id_header] = uuid4_text()
        return headers

    def secret_values(self) -> tuple[str, ...]:
        """Every credential this configuration holds, for redaction of printed text."""
        values = [self.headers[name] for name in self.secret_headers]
        if self.api_key:
            values.append(self.api_key)
        return tuple(v for v in values if v)


#: Request ids need uniqueness, not secrecy: a private generator seeded from the OS (and reseeded
#: in every forked child, so parallel workers never share a sequence) costs a fraction of uuid4's
#: os.urandom call per request. Private, so nobody's random.seed() can make ids repeat.
_IDS = random.Random()
os.register_at_fork(after_in_child=_IDS.seed)
_VERSION_VARIANT_CLEAR = ~((0xF000 << 64) | (0xC000 << 48))
_VERSION_VARIANT_SET = (0x4000 << 64) | (0x8000 << 48)


def uuid4_text() -> str:
    """A random (version 4) UUID in canonical text form; the gateway's per-request id."""
    h = "%032x" % ((_IDS.getrandbits(128) & _VERSION_VARIANT_CLEAR) | _VERSION_VARIANT_SET)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class EnvSource:
    """Variables from a mapping (the process environment by default), then a ``.env`` file."""

    def __init__(self, env: Mapping[str, str] | None = None, dotenv: Path | None = None) -> None:
        self._env: Mapping[str, str] = os.environ if env is None else env
        self._dotenv_path = Path(".env") if dotenv is None and env is None else dotenv
        self._dotenv: dict[str, str] | None = None

    def get(self, name: str) -> str | None:
        """The variable's value, or None when set nowhere."""
        value = self._env.get(name)
        if value is not None or self._dotenv_path is None:
            return value
        return self._file().get(name)

    def values(self, names: tuple[str, ...]) -> dict[str, str | None]:
        """``{name: get(name)}`` for each of ``names`` (read in one C-level pass when no ``.env`` is consulted)."""
        if self._dotenv_path is None:
            return dict(zip(names, map(self._env.get, names)))
        return {name: self.get(name) for name in names}

    def _file(self) -> dict[str, str]:
        if self._dotenv is None:
            self._dotenv = {}
            if self._dotenv_path is not None and self._dotenv_path.is_file():
                from dotenv import dotenv_values

                # interpolate=False: a "$" in a credential is text, never an expansion
                values = dotenv_values(self._dotenv_path, interpolate=False)
                self._dotenv = {k: v for k, v in values.items() if v is not None}
        return self._dotenv


def resolve_gateway_config(source: EnvSource | None = None) -> GatewayConfig | None:
    """The gateway configuration, or None when ``LLM_PROXY_BASE_URL`` is unset (direct access)."""
    source = source or EnvSource()
    raw = source.values(VARIABLES)
    if not any(raw.values()):
        return None  # nothing set (the common case): no length, base or orphan to check
    for name, value in raw.items():
        if value is not None and len(value) > _MAX_VALUE_CHARS:
            raise GatewayConfigError(f"{name} is {len(value)} characters long; the limit is {_MAX_VALUE_CHARS}")
    base = (raw[BASE_URL] or "").strip()
    if not base:
        orphans = [name for name in COMPANIONS if (raw[name] or "").strip()]
        if orphans:
            raise GatewayConfigError(
                f"{', '.join(orphans)} {'is' if len(orphans) == 1 else 'are'} set but {BASE_URL} is empty, so calls "
                f"would go straight to the providers and bypass the gateway; set {BASE_URL}, or unset "
                f"{'it' if len(orphans) == 1 else 'them'} to use direct provider access deliberately"
            )
        return None
    headers, secret_headers = _parse_headers(raw[HEADERS], source)
    request_id = (raw[REQUEST_ID_HEADER] or "").strip() or None
    if request_id is not None and not _is_token(request_id):
        raise GatewayConfigError(f"{REQUEST_ID_HEADER} must be an HTTP header name, got {request_id!r}")
    return GatewayConfig(
        base_url=_parse_base_url(base),
        api_key=(raw[API_KEY] or "").strip() or None,
        headers=headers,
        request_id_header=request_id,
        providers=_parse_providers(raw[PROVIDERS]),
        preferred_routes=_parse_preferred(raw[PREFERRED_ROUTE]),
        trust_namespace_wildcards=_parse_bool(raw[TRUST_WILDCARDS]),
        secret_headers=frozenset(secret_headers),
    )


def _parse_base_url(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise GatewayConfigError(f"{BASE_URL} must be an http(s) URL such as https://gateway.example.com, got {value!r}")
    if parts.query or parts.fragment or parts.username or parts.password:
        raise GatewayConfigError(f"{BASE_URL} must not carry a query, fragment or credentials; put the key in {API_KEY}")
    return value.rstrip("/")


def _is_token(name: str) -> bool:
    return bool(name) and all(ch in _TOKEN for ch in name)


def _parse_headers(raw: str | None, source: EnvSource) -> tuple[dict[str, str], list[str]]:
    if raw is None or not raw.strip():
        return {}, []
    try:
        parsed: Any = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise GatewayConfigError(
            f"{HEADERS} must be a JSON object of header name to value, but it is not valid JSON "
            f"(line {exc.lineno} column {exc.colno}: {exc.msg})"
        ) from None
    if not isinstance(parsed, dict):
        raise GatewayConfigError(f"{HEADERS} must be a JSON object of header name to value, got a JSON {type(parsed).__name__}")
    if len(parsed) > _MAX_HEADERS:
        raise GatewayConfigError(f"{HEADERS} has {len(parsed)} headers; the limit is {_MAX_HEADERS}")
    headers: dict[str, str] = {}
    secret: list[str] = []
    for name, value in parsed.items():
        if not _is_token(name.strip()):
            raise GatewayConfigError(f"{HEADERS} has {name!r}, which is not an HTTP header name")
        name = name.strip()
        if isinstance(value, bool):
            headers[name] = "true" if value else "false"
        elif isinstance(value, (int, float)):
            headers[name] = json.dumps(value)
        elif isinstance(value, str):
            try:
                expanded = expand_secret_refs(value, source.get, where=f"{HEADERS} value for {name!r}")
            except SecretReferenceError as exc:
                raise GatewayConfigError(str(exc)) from None
            if any(ch in expanded for ch in "\r\n\0"):
                raise GatewayConfigError(f"{HEADERS} value for {name!r} contains a line break or NUL")
            if expanded != value:
                secret.append(name)
            headers[name] = expanded
        else:
            raise GatewayConfigError(
                f"{HEADERS} value for {name!r} must be a string, number or boolean, got a JSON {type(value).__name__}"
            )
    return headers, secret


def _parse_providers(raw: str | None) -> frozenset[str] | None:
    if raw is None or not raw.strip():
        return None
    names = [item.strip().lower() for item in raw.split(",")]
    if any(not n for n in names):
        raise GatewayConfigError(f"{PROVIDERS} has an empty entry in {raw!r}; list provider names separated by commas")
    return frozenset(names)


def _parse_preferred(raw: str | None) -> tuple[str, ...]:
    if raw is None or not raw.strip():
        return ()
    entries = [item.strip() for item in raw.split(",")]
    if any(not e for e in entries):
        raise GatewayConfigError(f"{PREFERRED_ROUTE} has an empty entry in {raw!r}; list namespaces such as openrouter/,nebius/")
    return tuple(entries)


def _parse_bool(raw: str | None) -> bool:
    value = (raw or "").strip().lower()
    if value in ("", "false", "0", "no"):
        return False
    if value in ("true", "1", "yes"):
        return True
    raise GatewayConfigError(f"{TRUST_WILDCARDS} must be true or false, got {raw!r}")
