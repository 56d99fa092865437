"""Built kwargs -> the HTTP request litellm would send for them on an OpenAI-compatible route.

The kwargs are the request builder's (the same ones litellm receives: ``litellm.completion``'s on
a chat route, ``litellm.responses``'s on a Responses route, whose kwargs are already the Responses
body, see :mod:`capplan.executor.responses_request`); what litellm adds or
changes on these routes is in the plan's ``wire`` record, or, for a model a gateway renamed, in
:func:`capplan.executor.wire_dialect.model_dialect` (worked out once per model and remembered).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from capplan.core.reference_mode import speed_memo
from capplan.executor.direct.body_json import MessageListEncoder, body_bytes
from capplan.executor.direct.messages import CleanHistoryMemo, openai_messages
from capplan.executor.errors import MissingCredentialError, PlanInconsistencyError
from capplan.executor.plan import Plan, WireRoute
from capplan.executor.wire_dialect import (
    AZURE_API_KEY_HEADER_HOSTS,
    OPENAI_CHAT_PROVIDERS,
    RESPONSES_ACCEPT,
    ModelDialect,
    is_responses,
    litellm_provider,
    model_dialect,
    wire_model_name,
)

#: Keys of the built kwargs that steer the call rather than ride in the body.
TRANSPORT_KEYS = frozenset({
    "model", "api_base", "api_key", "custom_llm_provider", "max_retries", "num_retries", "timeout",
    "extra_headers", "extra_body", "allowed_openai_params",
})


@dataclass(frozen=True)
class HttpRequest:
    """One request as it goes on the wire (the key is in ``headers``; never log this object)."""

    url: str
    headers: dict[str, str]
    body: dict[str, Any]
    timeout_s: float | None
    #: the mapper's memory of message lists already encoded (the bytes are the same without it)
    encoder: MessageListEncoder | None = field(default=None, compare=False, repr=False)

    def content(self) -> bytes:
        """The body's bytes: ``json.dumps(body, ensure_ascii=False, separators=(",", ":"))``, UTF-8."""
        return body_bytes(self.body, self.encoder)


@dataclass(frozen=True)
class _Route:
    """What one provider's requests carry: the plan's record for its own route, litellm's facts for another."""

    base_url: str | None
    base_url_envs: tuple[str, ...]
    key_envs: tuple[str, ...]
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class RequestMapper:
    """Turns one plan's built kwargs into :class:`HttpRequest`; safe to share across threads."""

    def __init__(self, plan: Plan, env: Mapping[str, str]) -> None:
        wire = plan.wire
        if wire is None or wire.protocol == "litellm":
            raise PlanInconsistencyError(
                f"plan {plan.model.key!r}: the direct transport sends OpenAI-compatible chat and Responses routes "
                "only; this route speaks its own protocol: set `transport: litellm` for the model and recompile "
                "with `capplan compile`"
            )
        self.plan = plan
        self.wire: WireRoute = wire
        self._env = env
        self._own = _Route(wire.base_url, wire.base_url_envs, wire.key_envs, wire.path, dict(wire.headers),
                           dict(wire.body))
        self._own_dialect = ModelDialect(dict(wire.renames), wire.system_role)
        self._encoder = MessageListEncoder()
        self._clean = CleanHistoryMemo()

    def _route(self, provider: str) -> _Route:
        if provider == self.wire.provider:
            return self._own
        facts = OPENAI_CHAT_PROVIDERS.get(provider)
        if facts is None:
            raise PlanInconsistencyError(
                f"plan {self.plan.model.key!r}: a call routed to provider {provider!r}, which is not an OpenAI-compatible "
                "chat route; set `transport: litellm` for the model"
            )
        # a Responses call goes out as litellm's Responses sender sends it, whichever dialect routes it
        accept = RESPONSES_ACCEPT if is_responses(self.wire.protocol) else facts.accept
        body = {} if is_responses(self.wire.protocol) else dict(facts.body)
        return _Route(facts.base_url, facts.base_url_envs, facts.key_envs, self.wire.path, {"Accept": accept}, body)

    def _dialect(self, provider: str, name: str) -> ModelDialect:
        if provider == self.wire.provider and name == wire_model_name(provider, self.plan.model.wire_model):
            return self._own_dialect
        return _dialect(provider, name)

    def map(self, kwargs: Mapping[str, Any]) -> HttpRequest:
        """The HTTP request for one attempt's kwargs."""
        provider = litellm_provider(kwargs.get("custom_llm_provider"), str(kwargs["model"]))
        route = self._route(provider)
        name = wire_model_name(provider, str(kwargs["model"]))
        dialect = self._dialect(provider, name)
        body: dict[str, Any] = {}
        renames = dialect.renames
        for name_, value in kwargs.items():
            if name_ not in TRANSPORT_KEYS:
                body[renames.get(name_, name_)] = value
        body["model"] = name
        messages = body.get("messages")
        if messages is not None:
            if dialect.system_role != "system":
                messages = [_as_role(m, dialect.system_role) for m in messages]
            body["messages"] = openai_messages(messages, self._clean)
        extra = kwargs.get("extra_body")
        if extra:
            body.update(extra)
        for key_, value in route.body.items():
            body.setdefault(key_, value)
        base = self._base(kwargs.get("api_base"), route)
        headers = dict(route.headers)
        headers["Content-Type"] = "application/json"
        key: Any = kwargs.get("api_key") or self._key(route)
        if key:
            if provider == "azure_ai" and _host_endswith(base, AZURE_API_KEY_HEADER_HOSTS):
                headers["api-key"] = str(key)
            else:
                headers["Authorization"] = f"Bearer {key}"
        extra_headers = kwargs.get("extra_headers")
        if extra_headers:
            headers.update(extra_headers)
        timeout = kwargs.get("timeout")
        return HttpRequest(base.rstrip("/") + route.path, headers, body,
                           float(timeout) if isinstance(timeout, (int, float)) else None, self._encoder)

    def _base(self, given: Any, route: _Route) -> str:
        if isinstance(given, str) and given:
            return given
        for name in route.base_url_envs:
            value = self._env.get(name, "").strip()
            if value:
                return value
        if route.base_url:
            return route.base_url
        names = " or ".join(route.base_url_envs) or "an `endpoint:` in the model's binding"
        raise MissingCredentialError(
            f"plan {self.plan.model.key!r}: provider {self.wire.provider!r} has no default endpoint and none is "
            f"configured: set {names} (or pass --api-base)"
        )

    def _key(self, route: _Route) -> str | None:
        for name in route.key_envs:
            value = self._env.get(name, "").strip()
            if value:
                return value
        return None

    def key_variables(self) -> tuple[str, ...]:
        """The variables this route's key may be read from (for the redactor and preflight)."""
        return self._own.key_envs


@speed_memo(maxsize=256)  # one dialect per (provider, model): the same answer every build
def _dialect(provider: str, name: str) -> ModelDialect:
    return model_dialect(provider, name)


def _as_role(message: Any, role: str) -> Any:
    if isinstance(message, Mapping) and message.get("role") == "system":
        return {"content": message.get("content"), "role": role}
    return message


def _host_endswith(url: str, suffixes: tuple[str, ...]) -> bool:
    host = urlparse(url).hostname
    return host is not None and host.endswith(suffixes)
