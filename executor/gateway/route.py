"""Which name a model answers to on the gateway, and why.

The resolver derives exactly two candidates from the formatted model string ``<provider>/<name>``:
the whole string (the gateway proxies that provider) and ``<name>`` (the gateway serves the
upstream under the name's own namespace). No fuzzy matching: an alias route is invisible.

Outcomes (``RouteKind``):

``exact``         the catalog names a candidate: route there, in the OpenAI dialect.
``wildcard``      only under ``LLM_PROXY_TRUST_NAMESPACE_WILDCARDS``, and only ``<ns>/*`` where
                  ``<ns>`` is the model's own provider namespace; addressed by the full string.
``untranslated``  the catalog is unreadable or empty: keep the gateway, send the model string as is.
``direct``        the catalog answers and omits the model, or the provider is not allow-listed:
                  the call goes to the provider itself.

Several exact hits are a serving-path choice (the names can be backed by different upstreams),
so ``LLM_PROXY_PREFERRED_ROUTE`` must rank them; otherwise :class:`GatewayRouteAmbiguous`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from capplan.executor.errors import GatewayError

RouteKind = Literal["exact", "wildcard", "untranslated", "direct"]


class GatewayRouteAmbiguous(GatewayError):
    """The gateway serves the model under several names and no preferred route picks one."""


@dataclass(frozen=True)
class RouteDecision:
    """Where a model's calls go, and the one-line reason (shown by ``capplan gateway check``)."""

    kind: RouteKind
    #: The route name on the gateway; None for ``direct``.
    route: str | None
    reason: str

    @property
    def via_gateway(self) -> bool:
        """Whether calls reach the gateway at all."""
        return self.kind != "direct"


def candidates(model_string: str) -> tuple[str, ...]:
    """The names the model could answer to, most specific first."""
    _, sep, tail = model_string.partition("/")
    return (model_string, tail) if sep and tail else (model_string,)


def resolve_route(
    model_string: str,
    catalog: frozenset[str] | None,
    *,
    preferred: tuple[str, ...] = (),
    trust_namespace_wildcards: bool = False,
) -> RouteDecision:
    """Decide the route for ``model_string`` against ``catalog`` (None = unreadable)."""
    if not catalog:
        return RouteDecision(
            "untranslated", model_string,
            "gateway catalog unreadable or empty: keeping the gateway and sending the model string untranslated",
        )
    hits = [c for c in candidates(model_string) if c in catalog]
    if len(hits) == 1:
        return RouteDecision("exact", hits[0], f"catalog serves {hits[0]!r}")
    if len(hits) > 1:
        for prefix in preferred:
            for hit in hits:
                if hit.startswith(prefix):
                    return RouteDecision(
                        "exact", hit, f"catalog serves {' and '.join(map(repr, hits))}; LLM_PROXY_PREFERRED_ROUTE picks {prefix!r}"
                    )
        raise GatewayRouteAmbiguous(
            f"the gateway serves {model_string!r} under {len(hits)} names ({', '.join(hits)}), which can be backed by "
            f"different upstreams, and LLM_PROXY_PREFERRED_ROUTE "
            # its entries are not repeated: an error never quotes an environment value back
            + (f"({len(preferred)} {'entry' if len(preferred) == 1 else 'entries'}) matches none of them"
               if preferred else "is not set")
            + "; set it to the namespace to use (a comma-separated list is honoured in order)"
        )
    namespace, sep, _ = model_string.partition("/")
    if sep and f"{namespace}/*" in catalog:
        if trust_namespace_wildcards:
            return RouteDecision(
                "wildcard", model_string, f"no exact entry; the model's own namespace wildcard {namespace + '/*'!r} routes it"
            )
        return RouteDecision(
            "direct", None,
            f"catalog has no exact entry for {' or '.join(map(repr, candidates(model_string)))}; its wildcard "
            f"{namespace + '/*'!r} is not evidence unless LLM_PROXY_TRUST_NAMESPACE_WILDCARDS=true: direct to the provider",
        )
    return RouteDecision(
        "direct", None,
        f"catalog does not serve {' or '.join(map(repr, candidates(model_string)))}: direct to the provider",
    )


def direct_fallback_warning(decision: RouteDecision, model_key: str, gateway_url: str) -> str | None:
    """The one-line warning for a configured gateway that this model's calls bypass; None when they use it.

    ``gateway_url`` is shown as configured (the gateway configuration already holds it without
    userinfo); the reason is the resolver's own, which names model strings and catalog entries only.
    """
    if decision.via_gateway:
        return None
    return (f"{model_key}: calls go directly to the provider, not through the LLM gateway at {gateway_url} "
            f"({decision.reason}); every call is recorded with gateway_route_kind: direct")
