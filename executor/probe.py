"""Rate-limit probe mode: the run-level switch and the probe retry controller's waits.

Probe mode absorbs 429s at a fixed poll interval for up to a generous per-call budget, so a
run measures the throughput a provider actually serves instead of dying on 429s. It is a run
policy, never a model property: it is armed only by the run config's ``rate_limit_probe``
block passed to :class:`~capplan.executor.client.Client`, never by a plan or an environment variable,
so a path that must not probe (a judge, a fallback model) cannot be armed by accident.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:  # the run config names this module; lint and compile must not pay for tenacity
    import tenacity


class RateLimitProbeConfig(BaseModel):
    """The run config's ``rate_limit_probe`` block."""

    # strict and finite: `enabled: 'yes'` is a mistake, and `per_call_budget_s: .inf` would retry forever
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True, strict=True, allow_inf_nan=False)

    enabled: bool = Field(False, description="Arm probe mode for this run's agent calls.")
    retry_interval_s: float = Field(15.0, gt=0, le=3600, description="Fixed wait between 429 retries; the poll rate is its inverse.")
    jitter_fraction: float = Field(
        0.2, ge=0, lt=1,
        description="Symmetric jitter as a fraction of the interval, so blocked clients do not retry in lockstep; "
        "the mean wait stays exactly retry_interval_s. 0 restores the exact fixed interval.",
    )
    per_call_budget_s: float = Field(
        3600.0, gt=0, le=86_400, description="Wall-clock seconds one call may spend retrying 429s (checked after each attempt)."
    )
    bucket_width_s: int = Field(30, gt=0, le=86_400, description="Width of a telemetry window, in whole seconds on the Unix epoch.")
    max_buckets: int = Field(4096, gt=0, le=1_000_000, description="Cap on telemetry window rows per census; refusals are counted.")


def rate_limit_wait(config: RateLimitProbeConfig, rng: random.Random | None = None) -> Callable[[tenacity.RetryCallState], float]:
    """The probe's 429 wait: the fixed interval plus uniform jitter in ``±fraction × interval``."""
    interval = config.retry_interval_s
    spread = interval * config.jitter_fraction
    if spread == 0:
        return lambda state: interval
    draw = (rng or random.Random()).uniform
    return lambda state: interval + draw(-spread, spread)
