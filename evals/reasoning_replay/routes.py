"""Named routes: where a request goes, in which wire format, and with which key.

A route is data. ``--route custom`` builds one from ``--kind``, ``--base-url`` and
``--key-env``; a named route may have its base URL or key variable overridden the same way
(pointing ``nous`` at a staging Portal, for instance).
"""

from __future__ import annotations

import difflib
import ipaddress
import urllib.parse
from dataclasses import dataclass, replace
from typing import Any

from capplan.evals.reasoning_replay.errors import UsageError

KINDS = ("chat", "responses", "gemini")

# Sentinel credential source: the Portal key lives in ~/.hermes/auth.json, not in an env var.
NOUS_AUTH = "nous-auth"

# How a chat route asks for reasoning effort. Responses and Gemini have one way each.
EFFORT_STYLES = ("reasoning", "reasoning_effort", "none")


@dataclass(frozen=True)
class Route:
    """One provider endpoint and how to talk to it."""

    name: str
    kind: str
    base_url: str
    key: str  # env var name, NOUS_AUTH, or "" for a keyless local server
    effort_style: str = "none"  # chat only: see EFFORT_STYLES
    max_tokens_key: str = "max_tokens"
    send_temperature: bool = True
    rps: float = 2.0  # request starts per second, shared by every worker on this route
    lanes: bool = False  # response ids tell the OpenRouter lane from a direct upstream
    gemini_signature: bool = False  # synthetic tool calls need the documented dummy signature
    all_turns_context: bool = False  # also send turn 2 with reasoning.context = "all_turns"

    def is_local(self) -> bool:
        """Whether the endpoint is on this machine (loopback): a local server costs nothing."""
        host = (urllib.parse.urlsplit(self.base_url).hostname or "").lower()
        if host == "localhost" or host == "::1":
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False

    def display_base(self) -> str:
        """The base URL without userinfo or query, safe to record (some users put keys there)."""
        parts = urllib.parse.urlsplit(self.base_url)
        host = parts.hostname or ""
        if parts.port:
            host = f"{host}:{parts.port}"
        return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))


def _chat(name: str, base: str, key: str, **kw: Any) -> Route:
    return Route(name=name, kind="chat", base_url=base, key=key, **kw)


ROUTES: dict[str, Route] = {
    r.name: r
    for r in (
        _chat("nous", "https://inference-api.nousresearch.com/v1", NOUS_AUTH,
              effort_style="reasoning", lanes=True),
        _chat("openrouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY",
              effort_style="reasoning"),
        # OpenAI reasoning models refuse temperature and the legacy max_tokens name.
        _chat("openai-chat", "https://api.openai.com/v1", "OPENAI_API_KEY",
              effort_style="reasoning_effort", max_tokens_key="max_completion_tokens",
              send_temperature=False),
        Route("openai-responses", "responses", "https://api.openai.com/v1", "OPENAI_API_KEY",
              send_temperature=False, all_turns_context=True),
        _chat("xai-chat", "https://api.x.ai/v1", "XAI_API_KEY"),
        Route("xai-responses", "responses", "https://api.x.ai/v1", "XAI_API_KEY"),
        Route("gemini-native", "gemini", "https://generativelanguage.googleapis.com/v1beta",
              "GEMINI_API_KEY", gemini_signature=True),
        _chat("gemini-openai", "https://generativelanguage.googleapis.com/v1beta/openai",
              "GEMINI_API_KEY", effort_style="reasoning_effort", gemini_signature=True),
        _chat("huggingface", "https://router.huggingface.co/v1", "HF_TOKEN"),
        _chat("deepseek", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
        _chat("moonshot", "https://api.moonshot.ai/v1", "MOONSHOT_API_KEY"),
        _chat("zai", "https://api.z.ai/api/paas/v4", "ZAI_API_KEY"),
        _chat("dashscope", "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
              "DASHSCOPE_API_KEY"),
        _chat("minimax", "https://api.minimax.io/v1", "MINIMAX_API_KEY"),
        _chat("fireworks", "https://api.fireworks.ai/inference/v1", "FIREWORKS_API_KEY"),
        _chat("groq", "https://api.groq.com/openai/v1", "GROQ_API_KEY"),
        _chat("cerebras", "https://api.cerebras.ai/v1", "CEREBRAS_API_KEY"),
        _chat("mistral", "https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
        _chat("local", "http://127.0.0.1:8080/v1", "", rps=50.0),
    )
}


def resolve_route(name: str, *, kind: str | None = None, base_url: str | None = None,
                  key_env: str | None = None, rps: float | None = None,
                  effort_style: str | None = None) -> Route:
    """The route to use, with command-line overrides applied; unknown names are usage errors."""
    if name == "custom":
        if not base_url:
            raise UsageError("--route custom needs --base-url (and usually --key-env)")
        route = Route(name="custom", kind=kind or "chat", base_url=base_url, key=key_env or "",
                      effort_style=effort_style or "reasoning_effort")
    elif name in ROUTES:
        if kind and kind != ROUTES[name].kind:
            raise UsageError(f"--kind {kind} does not apply to route {name!r} (it speaks "
                             f"{ROUTES[name].kind}); use --route custom for another wire format")
        route = ROUTES[name]
        route = replace(route, base_url=base_url or route.base_url,
                        key=route.key if key_env is None else key_env)
        if effort_style:
            route = replace(route, effort_style=effort_style)
    else:
        raise UsageError(unknown_route_message(name))
    if rps is not None:
        route = replace(route, rps=rps)
    _check_base_url(route.base_url)
    return route


def unknown_route_message(name: str) -> str:
    """'unknown route', with a did-you-mean and the valid names."""
    names = sorted([*ROUTES, "custom"])
    close = difflib.get_close_matches(name, names, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return (f"unknown route {name!r}{hint}. Valid routes: {', '.join(names)}. For any other "
            f"OpenAI-compatible endpoint use --route custom --kind chat --base-url URL --key-env VAR")


def _check_base_url(url: str) -> None:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"--base-url must be an http(s) URL such as https://api.example.com/v1, "
                         f"got {url!r}")
