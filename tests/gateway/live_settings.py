"""The live-gateway test's switch: its own credential turns it on; then every companion must be set.

No ``LLM_PROXY_INT_TEST_API_KEY`` → the test skips (a checkout without the secret). The key
present but a companion missing → the test fails: holding the key says this environment means to
run it, and skipping would let a pipeline report green while testing nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

API_KEY = "LLM_PROXY_INT_TEST_API_KEY"
MODEL = "LLM_PROXY_INT_TEST_MODEL"
BASE_URL = "LLM_PROXY_INT_TEST_BASE_URL"
PROVIDER = "LLM_PROXY_INT_TEST_PROVIDER"
PINNED_MODEL = "LLM_PROXY_INT_TEST_PINNED_MODEL"
PINNED_PROVIDER = "LLM_PROXY_INT_TEST_PINNED_PROVIDER"


class LiveMisconfigured(Exception):
    """The credential is set but the configuration around it is incomplete."""


@dataclass(frozen=True)
class LiveSettings:
    api_key: str = field(repr=False)
    model: str
    base_url: str
    provider: str = "openai"
    pinned_model: str | None = None
    pinned_provider: str | None = None


def live_settings(env: Mapping[str, str]) -> LiveSettings | None:
    """None when the live test is off; the settings when on; LiveMisconfigured when half set."""
    key = env.get(API_KEY, "").strip()
    if not key:
        return None
    model = env.get(MODEL, "").strip()
    if not model:
        raise LiveMisconfigured(f"{API_KEY} is set but {MODEL} is not: name the model as the gateway routes it")
    base = env.get(BASE_URL, "").strip() or env.get("LLM_PROXY_BASE_URL", "").strip()
    if not base:
        raise LiveMisconfigured(f"{API_KEY} is set but neither {BASE_URL} nor LLM_PROXY_BASE_URL is")
    pinned_model, pinned_provider = env.get(PINNED_MODEL, "").strip(), env.get(PINNED_PROVIDER, "").strip()
    if bool(pinned_model) != bool(pinned_provider):
        missing = PINNED_PROVIDER if pinned_model else PINNED_MODEL
        raise LiveMisconfigured(f"{PINNED_MODEL} and {PINNED_PROVIDER} go together; {missing} is not set")
    if pinned_model and not env.get("OPENROUTER_API_KEY", "").strip():
        raise LiveMisconfigured(f"{PINNED_MODEL} needs OPENROUTER_API_KEY for the /generation lookup")
    return LiveSettings(key, model, base, env.get(PROVIDER, "").strip() or "openai",
                        pinned_model or None, pinned_provider or None)
