"""Per-provider and per-key call limits, as a run config declares them.

A limit is run-level data (how hard this deployment may push a provider), never plan data:
the same plan runs under different quotas. Keys are named by the environment variable that
holds them, so a limits file never carries a credential.
"""

# no `from __future__ import annotations`: pydantic then reads these annotations as objects
# instead of evaluating strings, a measurable share of every command's start-up

from pydantic import BaseModel, ConfigDict, Field

from capplan.core.default_factories import empty_dict


class _Strict(BaseModel):
    # strict and finite: a run config is untrusted input (`max_concurrent: '8'` or `.inf` is a mistake)
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True, strict=True, allow_inf_nan=False)


class CallLimit(_Strict):
    """How fast and how wide calls to one provider (or through one key) may go."""

    requests_per_minute: float | None = Field(
        None, gt=0, le=1_000_000, description="Sustained call starts per minute across the whole run (every worker, every node)."
    )
    max_concurrent: int | None = Field(None, gt=0, le=100_000, description="Calls in flight at once across the whole run.")


class RateLimits(_Strict):
    """The run's limits; a provider or key not listed is not limited (429s still slow it down)."""

    providers: dict[str, CallLimit] = Field(
        default_factory=empty_dict,
        description="Provider (the plan's providers.yaml binding key, e.g. openrouter) → its limit.",
    )
    keys: dict[str, CallLimit] = Field(
        default_factory=empty_dict,
        description="Credential env-var name (e.g. OPENROUTER_API_KEY, never its value) → the limit of that key.",
    )
    rate_limited_pause_s: float = Field(
        2.0, gt=0, le=600, description="How long every worker pauses a provider after a 429 without Retry-After."
    )
