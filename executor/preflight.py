"""Preflight: every credential a command's plans need, checked before anything is sent.

``capplan trial run``, ``send`` and ``preview`` build one client per plan and hand them here
first. Per plan, what it needs depends on where its calls go:

- the mock plan never reaches a wire: nothing;
- a route through the LLM gateway (``LLM_PROXY_BASE_URL``) with ``LLM_PROXY_API_KEY`` set: nothing
  more, the gateway's key stands in for the provider's (a gateway without a key admits by network
  position, so the provider's key is needed as on a direct route);
- a binding with rotation keys loaded (``api_keys_env``, else its key file): nothing more;
- a binding that names ``api_key_env``: that variable;
- a binding that names no key variable (litellm reads one of its own choosing): the variables
  litellm itself reports missing (``litellm.validate_environment``), never a table kept here.

Everything missing is raised together as one :class:`CredentialsMissingError`, one line per
variable naming the plans that need it; a value is never part of it. The same module words the
advice for a call the provider refused for its configuration (:func:`configuration_advice`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from capplan.core.redaction import redact_url
from capplan.executor.errors import CredentialsMissingError
from capplan.executor.gateway.config import API_KEY as GATEWAY_KEY_VARIABLE
from capplan.executor.provider_keys import litellm_model
from capplan.executor.run_extra import require_litellm

if TYPE_CHECKING:
    from capplan.executor.client import Client


def _litellm_missing(client: Client, api_base: str | None) -> list[str]:
    """What litellm says it lacks to call this plan's model (imports litellm; nothing is sent)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no cost-map download on import
    try:
        import litellm
    except ImportError:
        return []  # the client refuses the call itself, naming the extra to install
    binding = client.plan.binding.binding
    model = litellm_model(client.plan.model.wire_model, binding.custom_llm_provider)
    base = api_base or binding.endpoint
    try:
        report = litellm.validate_environment(model=model, api_base=base)
    except Exception:  # noqa: BLE001 - a model litellm cannot place is refused by the call, located there
        return []
    if report.get("keys_in_environment"):
        return []
    missing = [name for name in report.get("missing_keys") or [] if isinstance(name, str) and name]
    # litellm lists alternatives (GOOGLE_API_KEY, GEMINI_API_KEY) and companions (AZURE_API_BASE) alike:
    # one entry, in litellm's words, rather than a guess at which of them would do
    return [", ".join(missing)] if missing else []


def missing_variables(client: Client, *, api_base: str | None = None,
                      env: Mapping[str, str] | None = None) -> list[str]:
    """The variables ``client``'s calls need that are unset or empty (names only).

    Each entry is one variable, or litellm's own list (comma-separated) for a binding that names none.
    """
    if client.mock:
        return []
    credentials = os.environ if env is None else env
    route = client.route
    if route is not None and route.via_gateway and client.gateway is not None and client.gateway.config.api_key:
        return []  # the gateway's key stands in for the provider's
    # a gateway without a key admits by network position (docs/gateway.md): the provider's key still travels
    if client.keys is not None:
        return []
    variable = client.plan.binding.binding.api_key_env
    if variable:
        return [] if credentials.get(variable, "").strip() else [variable]
    wire = client.plan.wire
    if client.direct is not None and wire is not None:
        # the direct transport reads the variables its plan names, as litellm would for this route
        if not wire.key_envs or any(credentials.get(name, "").strip() for name in wire.key_envs):
            return []
        return [", ".join(wire.key_envs)]
    return _litellm_missing(client, api_base)


def check_credentials(clients: Sequence[tuple[Client, str | None]], *,
                      env: Mapping[str, str] | None = None) -> None:
    """Raise :class:`CredentialsMissingError` when any plan of ``clients`` lacks a credential.

    ``clients`` pairs each plan's client with the ``--api-base`` its calls use (None: the
    binding's endpoint). All missing variables are reported at once, each with its plans.
    """
    if any(client.calls_through_litellm for client, _ in clients):
        # without the run extra no call can go out at all: say what to install before what to set
        require_litellm()
    problems = missing_credentials_problems(clients, env=env)
    if problems:
        raise CredentialsMissingError(problems)


def missing_credentials_problems(clients: Sequence[tuple[Client, str | None]], *,
                                 env: Mapping[str, str] | None = None) -> list[str]:
    """One line per missing variable, naming the plans that need it (empty when nothing is missing)."""
    needed: dict[str, list[str]] = {}
    routed: set[str] = set()
    for client, api_base in clients:
        for name in missing_variables(client, api_base=api_base, env=env):
            plans = needed.setdefault(name, [])
            if client.plan.model.key not in plans:
                plans.append(client.plan.model.key)
            if client.route is not None and client.route.via_gateway:
                routed.add(name)
    problems: list[str] = []
    for name, plans in needed.items():
        where = "the environment"
        if name in routed:
            where += f", or set {GATEWAY_KEY_VARIABLE} (environment or .env) for the gateway, whose key stands in for it"
        noun = "plan" if len(plans) == 1 else "plans"
        verb = "are" if ", " in name else "is"
        problems.append(f"{name} {verb} not set; needed by {noun} {', '.join(plans)} (set it in {where})")
    return problems


def configuration_advice(client: Client, api_base: str | None = None) -> str:
    """What to fix when ``client``'s provider refused a call for its configuration: who, and which variable or URL.

    Names the provider (or the gateway) and the variable or URL to check; never a value of either.
    """
    plan = client.plan
    route = client.route
    if route is not None and route.via_gateway and client.gateway is not None:
        return (f"the LLM gateway at {redact_url(client.gateway.config.base_url)} refused the call for plan "
                f"{plan.model.key}: check {GATEWAY_KEY_VARIABLE} and that the gateway serves {plan.model.model_id}")
    binding = plan.binding.binding
    provider = plan.binding.key or plan.model.provider
    if client.keys is not None:
        variable = client.keys.source.split(" ", 1)[0]
    elif binding.api_key_env:
        variable = binding.api_key_env
    elif client.direct is not None and plan.wire is not None and plan.wire.key_envs:
        variable = " or ".join(plan.wire.key_envs)  # the direct transport's own variable: litellm is not asked
    else:
        from capplan.executor.provider_keys import litellm_key_variables

        names = litellm_key_variables(litellm_model(plan.model.wire_model, binding.custom_llm_provider))
        variable = " or ".join(names) if names else "the provider's API-key variable"
    endpoint = api_base or binding.endpoint
    where = f" at {redact_url(endpoint)}" if endpoint else ""
    return (f"provider {provider}{where} refused the call for plan {plan.model.key} (model {plan.model.wire_model}): "
            f"check {variable}, the endpoint and the model name")
