"""The gateway transport, read once per client from seven ``LLM_PROXY_*`` variables.

Setting ``LLM_PROXY_BASE_URL`` turns the gateway on; the others are optional companions. Values
come from the process environment, then from the container's secrets payload
(``TOLOKAFORGE_SECRETS_JSON``: a JSON object of names to strings, which the spec's runner
container is started with), then from a ``.env`` file in the working directory (the first source
that sets a name wins). Every malformed value, and every companion set while the base URL is empty,
raises :class:`GatewayConfigError` naming the variable when the client is built: a typo must
never run a whole evaluation straight at the providers with unattributed spend.

An error names the variable and the kind of problem and never quotes the value: a key pasted
into the wrong variable must not reach a CI log through the message that refuses it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from capplan.core.dotenv_file import DotenvError, read_dotenv, read_dotenv_text
from capplan.core.ids import uuid4_text
from capplan.core.input_limits import MAX_CONFIG_BYTES, MAX_NESTING, InputLimitError, check_flow_nesting
from capplan.executor.binding import FailureRule
from capplan.executor.errors import GatewayError
from capplan.executor.gateway.failure_rules import LITELLM_PROXY_RULES
from capplan.executor.gateway.secret_refs import SecretReferenceError, expand_secret_refs

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
_MAX_HEADER_NAME_CHARS = 256
_MAX_HEADER_VALUE_CHARS = 8192
_MAX_ENTRY_CHARS = 128
_MAX_NUMBER_CHARS = 64
_ALNUM = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_TOKEN = _ALNUM | frozenset("!#$%&'*+-.^_`|~")
_HOST_CHARS = _ALNUM | frozenset("-._")
_PROVIDER_CHARS = _ALNUM | frozenset("-._/")
_ROUTE_CHARS = _ALNUM | frozenset("-._/:@")


class GatewayConfigError(GatewayError):
    """An ``LLM_PROXY_*`` variable is malformed, or a companion is set without the base URL.

    ``location`` is set when the problem sits in a file (``.env:LINE:COL``); ``str()`` then
    starts with it too, so a caller that ignores the attribute still prints where, while
    ``message`` (what :meth:`render` shows after the place) does not repeat it.
    """

    def __init__(self, message: str, *, location: str | None = None, hint: str | None = None) -> None:
        super().__init__(message, location=location, hint=hint)
        if location and message.startswith(f"{location}: "):
            self.message = message[len(location) + 2:]


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
    #: What the gateway (a LiteLLM proxy) answers when a call's setup is wrong, with evidence
    #: (:mod:`capplan.executor.gateway.failure_rules`); applied to calls that go through it.
    failure_rules: tuple[FailureRule, ...] = LITELLM_PROXY_RULES

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

    def credential_values(self) -> tuple[str, ...]:
        """Every value this configuration sends that may be a credential, for the redactor.

        The key and *every* header value, literal or expanded from ``${secret:NAME}``: a team
        token written straight into ``LLM_PROXY_HEADERS`` is as secret as one referenced, and a
        gateway that echoes its request headers must not get either into a log or a trajectory.
        """
        values = [self.api_key or "", *self.headers.values()]
        return tuple(dict.fromkeys(v for v in values if v))

    def secret_values(self) -> tuple[str, ...]:
        """The same values as :meth:`credential_values` (the older name)."""
        return self.credential_values()


#: The container secrets payload the spec's runner container gets: a JSON object of names to strings.
CONTAINER_SECRETS = "TOLOKAFORGE_SECRETS_JSON"


class EnvSource:
    """Variables from a mapping (the process environment by default), then the container secrets payload
    (:data:`CONTAINER_SECRETS` in that mapping), then a ``.env`` file."""

    def __init__(self, env: Mapping[str, str] | None = None, dotenv: Path | None = None) -> None:
        self._env: Mapping[str, str] = os.environ if env is None else env
        self._dotenv_path = Path(".env") if dotenv is None and env is None else dotenv
        self._dotenv: dict[str, str] | None = None
        self._payload: dict[str, str] | None = None

    def get(self, name: str) -> str | None:
        """The variable's value, or None when set nowhere."""
        value = self._env.get(name)
        if value is not None:
            return value
        value = self._container().get(name)
        if value is not None or self._dotenv_path is None:
            return value
        return self._file().get(name)

    def values(self, names: tuple[str, ...]) -> dict[str, str | None]:
        """``{name: get(name)}`` for each of ``names`` (read in one C-level pass when only the mapping is consulted)."""
        if self._dotenv_path is None and CONTAINER_SECRETS not in self._env:
            return dict(zip(names, map(self._env.get, names)))
        return {name: self.get(name) for name in names}

    def where(self, name: str) -> str | None:
        """The ``.env`` place (``path:LINE:COL``) that sets ``name``, when its value comes from that file; else None."""
        if name in self._env or name in self._container() or self._dotenv_path is None or name not in self._file():
            return None
        found = str(self._dotenv_path)
        # python-dotenv keeps no positions; the last assignment of the name is the one it returns
        assignment = re.compile(rf"[ \t]*(?:export[ \t]+)?{re.escape(name)}[ \t]*=")
        for number, line in enumerate(read_dotenv_text(self._dotenv_path).split("\n"), 1):
            if assignment.match(line):
                col = len(line) - len(line.lstrip(" \t")) + 1
                found = f"{self._dotenv_path}:{number}:{col}"
        return found

    def _container(self) -> dict[str, str]:
        """The container secrets payload, validated once; a malformed one is refused naming the variable only."""
        if self._payload is None:
            raw = self._env.get(CONTAINER_SECRETS)
            self._payload = {} if raw is None or not raw.strip() else _parse_payload(raw)
        return self._payload

    def _file(self) -> dict[str, str]:
        if self._dotenv is None:
            self._dotenv = {}
            if self._dotenv_path is not None:
                try:
                    self._dotenv = read_dotenv(self._dotenv_path)
                except DotenvError as exc:
                    # the message starts with the place too, so a caller that ignores ``location`` still says where
                    where = exc.location or str(self._dotenv_path)
                    raise GatewayConfigError(f"{where}: {exc.message} (capplan reads LLM_PROXY_* variables from it)",
                                             location=where) from None
        return self._dotenv


def _parse_payload(raw: str) -> dict[str, str]:
    if len(raw) > MAX_CONFIG_BYTES:
        raise GatewayConfigError(f"{CONTAINER_SECRETS} is {len(raw)} characters long; the limit is {MAX_CONFIG_BYTES}")
    try:
        data = json.loads(raw, parse_constant=_not_a_string)
    except (ValueError, RecursionError):
        data = None
    if not isinstance(data, dict):
        raise GatewayConfigError(f"{CONTAINER_SECRETS} must be a JSON object of variable names to strings "
                                 "(the container's secrets payload); it does not parse as one")
    bad = sum(1 for k, v in data.items() if not isinstance(k, str) or not isinstance(v, str))
    if bad:
        raise GatewayConfigError(f"{CONTAINER_SECRETS}: {bad} entr{'y is' if bad == 1 else 'ies are'} not a string "
                                 "value; every secret in the payload is text")
    return data


def _not_a_string(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def resolve_gateway_config(source: EnvSource | None = None) -> GatewayConfig | None:
    """The gateway configuration, or None when ``LLM_PROXY_BASE_URL`` is unset (direct access)."""
    source = source or EnvSource()
    raw = source.values(VARIABLES)
    if not any(raw.values()):
        return None  # nothing set (the common case): no length, base or orphan to check
    for name, value in raw.items():
        if value is not None and len(value) > _MAX_VALUE_CHARS:
            raise GatewayConfigError(f"{name} is {len(value)} characters long; the limit is {_MAX_VALUE_CHARS}")
    for name in _ONE_LINE:
        _refuse_control_at_ends(name, raw[name], source)
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
    base_url = _parse_base_url(base)
    api_key = (raw[API_KEY] or "").strip() or None
    if api_key is not None and (problem := credential_problem(api_key)):
        raise GatewayConfigError(f"{API_KEY} {problem}")
    headers, secret_headers = _parse_headers(raw[HEADERS], source)
    request_id = (raw[REQUEST_ID_HEADER] or "").strip() or None
    if request_id is not None:
        if not _is_token(request_id):
            raise GatewayConfigError(f"{REQUEST_ID_HEADER} must be an HTTP header name (letters, digits and !#$%&'*+-.^_`|~)")
        if request_id.lower() in {name.lower() for name in headers}:
            raise GatewayConfigError(
                f"{REQUEST_ID_HEADER} names a header that {HEADERS} also sets; each request's id would replace "
                f"the fixed value, so name a header of its own"
            )
    return GatewayConfig(
        base_url=base_url,
        api_key=api_key,
        headers=headers,
        request_id_header=request_id,
        providers=_parse_providers(raw[PROVIDERS]),
        preferred_routes=_parse_preferred(raw[PREFERRED_ROUTE]),
        trust_namespace_wildcards=_parse_bool(raw[TRUST_WILDCARDS]),
        secret_headers=frozenset(secret_headers),
    )


#: the variables whose value is one line of text: surrounding spaces are dropped, nothing else is
_ONE_LINE = (BASE_URL, API_KEY, REQUEST_ID_HEADER, PROVIDERS, PREFERRED_ROUTE, TRUST_WILDCARDS)


def _refuse_control_at_ends(name: str, value: str | None, source: EnvSource) -> None:
    """A line break, tab or other control character before or after a one-line value is an error.

    Stripping it would hide a value read from a file with Windows line endings (``$(cat file)``
    keeps the CR) or a quoted ``.env`` value spanning lines; a character inside the value is
    refused by the value's own check, which names its kind.
    """
    if value is None:
        return
    leading, trailing = value[:len(value) - len(value.lstrip())], value[len(value.rstrip()):]
    if leading.strip(" ") == "" and trailing.strip(" ") == "":
        return  # plain spaces around a value are dropped, as they always were
    side = "starts" if leading.strip(" ") else "ends"
    where = source.where(name)
    raise GatewayConfigError(
        f"{name} {side} with a line break (CR or LF), tab or other control character; capplan does not remove "
        "it silently" + ("" if where else " (set in the environment)"), location=where,
        hint="remove it: a value read from a file saved with Windows line endings (or `$(cat file)` of one) "
             "keeps a CR at its end")


def credential_problem(value: str) -> str | None:
    """What makes ``value`` unusable as a key (a phrase to follow the variable's name), or None.

    A key is one run of visible ASCII: a newline or other control character pasted with it
    would split or corrupt the ``Authorization`` header, and a space means two things were
    pasted. The phrase never quotes the value.
    """
    for ch in value:
        if not "!" <= ch <= "~":
            kind = "a space" if ch == " " else "a non-ASCII character" if ord(ch) > 0x7E else "a line break or control character"
            return f"contains {kind}; a key is one run of visible ASCII characters"
    return None


def _parse_base_url(value: str) -> str:
    # every check reports a kind, never the text: a key pasted here must not be echoed back
    hint = "such as https://gw.example.com/v1"
    for ch in value:
        if not "!" <= ch <= "~":
            kind = "a space" if ch == " " else "a non-ASCII character (write the host in its xn-- form)" \
                if ord(ch) > 0x7E else "a line break, NUL or other control character"
            raise GatewayConfigError(f"{BASE_URL} contains {kind}; it must be an http(s) URL {hint}")
    try:
        parts = urlsplit(value)
        port = parts.port
        host = parts.hostname
    except ValueError:
        raise GatewayConfigError(
            f"{BASE_URL} is not a well-formed URL (a bracketed IPv6 host or the port is malformed, or the port is "
            f"outside 1-65535); it must be an http(s) URL {hint}"
        ) from None
    if parts.scheme not in ("http", "https"):
        kind = "has no scheme" if not parts.scheme or "://" not in value else "uses a scheme other than http or https"
        raise GatewayConfigError(f"{BASE_URL} {kind}; it must be an http(s) URL {hint}")
    if parts.username is not None or parts.password is not None:
        raise GatewayConfigError(f"{BASE_URL} must not carry credentials (user:password@); put the key in {API_KEY}")
    if not host:
        raise GatewayConfigError(f"{BASE_URL} has no host; it must be an http(s) URL {hint}")
    if not parts.netloc.startswith("[") and any(ch not in _HOST_CHARS for ch in host):
        raise GatewayConfigError(f"{BASE_URL} has a host that is not a host name (letters, digits, '-', '.'); "
                                 f"it must be an http(s) URL {hint}")
    if port == 0 or parts.netloc.endswith(":"):
        raise GatewayConfigError(f"{BASE_URL} has an empty or zero port; the port must be 1-65535")
    if parts.query or parts.fragment or "?" in value or "#" in value:
        raise GatewayConfigError(f"{BASE_URL} must not carry a query or fragment; it is the base the API paths follow")
    return value.rstrip("/")


def _is_token(name: str) -> bool:
    return bool(name) and len(name) <= _MAX_HEADER_NAME_CHARS and all(ch in _TOKEN for ch in name)


class _Pairs(list[tuple[str, Any]]):
    """A JSON object as its ``(name, value)`` pairs in order, so a repeated name is still seen."""


class _Number:
    """A JSON number kept as its source text: a header sends the text, and Python's ``int`` of a
    5 000-digit literal is an error (and quadratic) before any check could run."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def _no_constant(name: str) -> Any:
    raise GatewayConfigError(f"{HEADERS} has {name}, which is not a JSON number; quote it if it is a header value")


def _parse_headers(raw: str | None, source: EnvSource) -> tuple[dict[str, str], list[str]]:
    if raw is None or not raw.strip():
        return {}, []
    shape = f"{HEADERS} must be a JSON object of header name to value"
    try:
        # the parser recurses once per level, so depth is measured on the text first
        check_flow_nesting(raw, MAX_NESTING)
        pairs: Any = json.loads(raw, object_pairs_hook=_Pairs, parse_int=_Number, parse_float=_Number,
                                parse_constant=_no_constant)
    except InputLimitError as exc:
        raise GatewayConfigError(f"{HEADERS} is {exc} at line {exc.line} column {exc.col}; {shape}") from None
    except json.JSONDecodeError as exc:
        raise GatewayConfigError(
            f"{shape}, but it is not valid JSON (line {exc.lineno} column {exc.colno}: {exc.msg})"
        ) from None
    except RecursionError:
        raise GatewayConfigError(f"{HEADERS} is nested too deeply; {shape}") from None
    if not isinstance(pairs, _Pairs):
        kind = _json_kind(pairs)
        raise GatewayConfigError(f"{shape}, got a JSON {kind}")
    if len(pairs) > _MAX_HEADERS:
        raise GatewayConfigError(f"{HEADERS} has {len(pairs)} headers; the limit is {_MAX_HEADERS}")
    headers: dict[str, str] = {}
    secret: list[str] = []
    first_entry: dict[str, int] = {}
    # headers are referred to by position: a name that fails the check may be a pasted secret
    for position, (name, value) in enumerate(pairs, 1):
        where = f"{HEADERS} entry {position}"
        name = name.strip()
        if not _is_token(name):
            raise GatewayConfigError(
                f"{where} has a name that is not an HTTP header name (1-{_MAX_HEADER_NAME_CHARS} of letters, digits "
                f"and !#$%&'*+-.^_`|~)"
            )
        folded = name.lower()
        if folded in first_entry:
            raise GatewayConfigError(
                f"{where} names the same header as entry {first_entry[folded]} (header names are compared "
                f"case-insensitively); which value is sent would depend on the HTTP client, so keep one"
            )
        first_entry[folded] = position
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, _Number):
            if len(value.text) > _MAX_NUMBER_CHARS:
                raise GatewayConfigError(
                    f"{where} value is a JSON number of {len(value.text)} characters; the limit is "
                    f"{_MAX_NUMBER_CHARS} (quote a longer value as a string)"
                )
            text = value.text
        elif isinstance(value, str):
            try:
                text = expand_secret_refs(value, source.get, where=f"{where} value")
            except SecretReferenceError as exc:
                raise GatewayConfigError(str(exc)) from None
            if text != value:
                secret.append(name)
        else:
            raise GatewayConfigError(f"{where} value must be a string, number or boolean, got a JSON {_json_kind(value)}")
        if problem := _header_value_problem(text):
            raise GatewayConfigError(f"{where} value {problem}")
        headers[name] = text
    return headers, secret


def _json_kind(value: Any) -> str:
    if isinstance(value, _Pairs):
        return "object"
    if isinstance(value, _Number):
        return "number"
    return "null" if value is None else "array" if isinstance(value, list) else type(value).__name__


def _header_value_problem(text: str) -> str | None:
    """What keeps ``text`` off an HTTP header line, or None (RFC 9110 field-value, ASCII only)."""
    if len(text) > _MAX_HEADER_VALUE_CHARS:
        return f"is {len(text)} characters long; the limit is {_MAX_HEADER_VALUE_CHARS}"
    for ch in text:
        if ch in "\r\n":
            return "contains a line break (CR or LF), which would end the header line and start another"
        if (ch < " " and ch != "\t") or ch == "\x7f":
            return "contains a NUL or other control character"
        if ch > "~":
            return "contains a non-ASCII character; HTTP header values are sent as ASCII"
    return None


def _entries(raw: str, name: str, one: str, many: str, allowed: frozenset[str]) -> list[str]:
    entries = [item.strip() for item in raw.split(",")]
    for position, entry in enumerate(entries, 1):
        if not entry:
            raise GatewayConfigError(f"{name} has an empty entry (entry {position}); list {many}, separated by commas")
        if len(entry) > _MAX_ENTRY_CHARS or any(ch not in allowed for ch in entry):
            raise GatewayConfigError(
                f"{name} entry {position} is not {one} (at most {_MAX_ENTRY_CHARS} of letters, digits and "
                f"{''.join(sorted(allowed - _ALNUM))})"
            )
    return entries


def _parse_providers(raw: str | None) -> frozenset[str] | None:
    if raw is None or not raw.strip():
        return None
    return frozenset(e.lower() for e in _entries(raw, PROVIDERS, "a provider name", "provider names", _PROVIDER_CHARS))


def _parse_preferred(raw: str | None) -> tuple[str, ...]:
    if raw is None or not raw.strip():
        return ()
    return tuple(_entries(raw, PREFERRED_ROUTE, "a route namespace", "namespaces such as openrouter/ and nebius/",
                          _ROUTE_CHARS))


def _parse_bool(raw: str | None) -> bool:
    value = (raw or "").strip().lower()
    if value in ("", "false", "0", "no"):
        return False
    if value in ("true", "1", "yes"):
        return True
    raise GatewayConfigError(f"{TRUST_WILDCARDS} must be true or false (also accepted: 1/0, yes/no)")
