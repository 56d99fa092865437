"""``probe.json``: a probe-mode run's telemetry census, summed over its trials.

Each trial records into a census of its own and returns it with its records, so a trial that
ran in another process or on another machine is summed by the driver exactly like a local
one. Windows start on the Unix epoch (see :mod:`capplan.executor.probe_stats`), so trials' rows add
up window by window. A resumed run adds the new trials' calls to the census already on disk:
it counts every call the run made, interrupted attempts included.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from capplan.executor.probe import RateLimitProbeConfig
from capplan.executor.probe_stats import ProbeStats
from capplan.trials.run_folder.confined import atomic_write

CENSUS_FILE = "probe.json"


class CensusCounters(BaseModel):
    """Totals of one series or one window."""

    model_config = ConfigDict(extra="forbid")

    role: str = Field(description="Who made the calls: agent (the model under test) or user (the user simulator).")
    model: str = Field(description="The plan's model id.")
    successes: int = Field(ge=0, description="Calls that returned.")
    duration_s: float = Field(ge=0, description="Seconds the successful calls' final attempts were in flight.")
    prompt_tokens: int = Field(ge=0, description="Prompt tokens of the successful calls.")
    completion_tokens: int = Field(ge=0, description="Completion tokens of the successful calls.")
    rate_limit_retries: int = Field(ge=0, description="429s that were retried after a probe wait.")
    rate_limit_wait_s: float = Field(ge=0, description="Seconds waited before those retries.")
    first_429_ts: float | None = Field(None, description="Unix time of the first retried 429, if any.")
    last_429_ts: float | None = Field(None, description="Unix time of the last retried 429, if any.")


class CensusWindow(CensusCounters):
    """One telemetry window of one series."""

    bucket_start: int = Field(description="Window start, whole seconds on the Unix epoch (a multiple of the width).")


class ProbeCensus(BaseModel):
    """The run folder's ``probe.json``."""

    model_config = ConfigDict(extra="forbid")

    rate_limit_probe: RateLimitProbeConfig = Field(description="The run config's rate_limit_probe block the run used.")
    bucket_width_s: int = Field(gt=0, description="Width of every window, in seconds.")
    dropped_buckets: int = Field(ge=0, description="Window rows refused by max_buckets (still in the series totals).")
    series: list[CensusCounters] = Field(description="Totals per role and model.")
    buckets: list[CensusWindow] = Field(description="Totals per role, model and window.")


def new_census(config: RateLimitProbeConfig) -> ProbeStats:
    """An empty census with the run's window width and row cap."""
    return ProbeStats(bucket_width_s=config.bucket_width_s, max_buckets=config.max_buckets)


def load_census(root: Path, config: RateLimitProbeConfig) -> ProbeStats:
    """The census a previous leg of this run left, or an empty one."""
    stats = new_census(config)
    path = root / CENSUS_FILE
    if path.is_file():
        saved = ProbeCensus.model_validate_json(path.read_bytes())
        if saved.bucket_width_s == config.bucket_width_s:
            stats.merge(ProbeStats.from_json(saved.model_dump(mode="json")))
        else:
            raise ValueError(f"{path} has {saved.bucket_width_s}s windows but the run config asks for "
                             f"{config.bucket_width_s}s: keep bucket_width_s for a resumed run, or use a new --out")
    return stats


def write_census(root: Path, config: RateLimitProbeConfig, stats: ProbeStats) -> None:
    """Write ``probe.json`` atomically."""
    census = ProbeCensus.model_validate({"rate_limit_probe": config.model_dump(mode="json"), **stats.to_json()})
    text = json.dumps(census.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"
    atomic_write(root / CENSUS_FILE, text.encode("utf-8"))
