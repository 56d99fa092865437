"""Small sealed plans for executor tests, built the way the compiler emits them."""

from __future__ import annotations

import re
from typing import Any

from capplan.executor.plan import PLAN_VERSION, Plan
from capplan.executor.registry import DEFAULT_POLICY

PROVIDER_BINDINGS: dict[str, dict[str, Any]] = {
    "openai": {},
    "anthropic": {},
    "openrouter": {
        "api_key_env": "OPENROUTER_API_KEY",
        "api_keys_env": "OPENROUTER_API_KEYS",
        "key_file_env": "OPENROUTER_KEY_FILE",
        "custom_llm_provider": "openrouter",
    },
    "nova": {
        "endpoint": "https://api.nova.amazon.com/v1",
        "api_base_env": "NOVA_API_BASE",
        "api_key_env": "NOVA_API_KEY",
        "unroutable": True,
        "custom_llm_provider": "openai",
        "format_model_name_bare": True,
        "kwargs_pin_transport": True,
        "slug_rewrite": {"strip_prefix": "nova/", "ensure_prefix": "openai/"},
    },
    "mock": {"unroutable": True},
}


def _key_of(name: str) -> str:
    # as the compiler names an ad-hoc model: a key is one safe path segment (capplan.core.safe_names)
    return re.sub(r"[^A-Za-z0-9._-]+", "__", name)


def make_plan(
    provider: str = "openai",
    name: str = "gpt-test",
    *,
    key: str | None = None,
    policies: dict[str, str | tuple[str, dict[str, Any]]] | None = None,
    params: dict[str, Any] | None = None,
    rules: dict[str, Any] | None = None,
    allowed_openai_params: tuple[str, ...] = (),
    openrouter: dict[str, Any] | None = None,
    pricing: dict[str, Any] | None = None,
    request_defaults: dict[str, Any] | None = None,
) -> Plan:
    """A sealed plan; ``policies`` maps slot -> name or (name, params); ``params`` are GenerationParams kwargs."""
    head = provider.split("/")[0]
    binding = PROVIDER_BINDINGS.get(head, {})
    bare = binding.get("format_model_name_bare", False)
    model_id = name if bare else f"{provider}/{name}"
    wire = model_id
    rewrite = binding.get("slug_rewrite")
    if rewrite:
        if wire.startswith(rewrite["strip_prefix"]):
            wire = wire[len(rewrite["strip_prefix"]) :]
        if not wire.startswith(rewrite["ensure_prefix"]):
            wire = rewrite["ensure_prefix"] + wire
    slots: dict[str, Any] = {slot: {"name": name_, "params": {}} for slot, name_ in DEFAULT_POLICY.items()}
    for slot, ref in (policies or {}).items():
        slots[slot] = {"name": ref, "params": {}} if isinstance(ref, str) else {"name": ref[0], "params": ref[1]}
    if params:
        slots["params_policy"] = {"name": "generation_params", "params": params}
    body = {
        "plan_version": PLAN_VERSION,
        "model": {"key": key or _key_of(name), "provider": provider, "name": name, "model_id": model_id, "wire_model": wire},
        "effective_preset": "test",
        "policies": slots,
        "param_value_rules": rules or {},
        "allowed_openai_params": list(allowed_openai_params),
        "litellm_model": None,
        "loop": {},
        "binding": {"key": head if head in PROVIDER_BINDINGS else None, "binding": binding},
        "openrouter": openrouter,
        "pricing": pricing,
        "request_defaults": request_defaults or {},
        "provenance": {},
    }
    return Plan.seal(body)
