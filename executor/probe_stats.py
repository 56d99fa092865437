"""Probe telemetry: both sides of throughput, per role and model, in absolute-time windows.

Failures (each 429 retry and its wait) are recorded by the retry controller's ``before_sleep``
hook; successes (calls, in-flight seconds, tokens) by the client when a call returns. A window
starts at ``floor(ts / width) * width`` on the Unix epoch, never at run start, so windows written
by parallel processes line up and sum window by window (:meth:`ProbeStats.merge`).
"""

from __future__ import annotations

import dataclasses
import math
import threading
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Counters:
    """One series' (or one window's) totals."""

    successes: int = 0
    duration_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    rate_limit_retries: int = 0
    rate_limit_wait_s: float = 0.0
    first_429_ts: float | None = None
    last_429_ts: float | None = None

    def add(self, other: Counters) -> None:
        """Sum ``other`` into this one."""
        self.successes += other.successes
        self.duration_s += other.duration_s
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.rate_limit_retries += other.rate_limit_retries
        self.rate_limit_wait_s += other.rate_limit_wait_s
        self._window(other.first_429_ts)
        self._window(other.last_429_ts)

    def _window(self, ts: float | None) -> None:
        if ts is None:
            return
        self.first_429_ts = ts if self.first_429_ts is None else min(self.first_429_ts, ts)
        self.last_429_ts = ts if self.last_429_ts is None else max(self.last_429_ts, ts)


@dataclass
class ProbeStats:
    """A trial's (or a run leg's) probe census; thread-safe, bounded in rows."""

    bucket_width_s: int = 30
    max_buckets: int = 4096
    series: dict[tuple[str, str], Counters] = field(default_factory=dict)
    buckets: dict[tuple[str, str, int], Counters] = field(default_factory=dict)
    #: Window rows refused because ``max_buckets`` was reached (recorded in the series totals only).
    dropped_buckets: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def bucket_start(self, ts: float) -> int:
        """The start of the window holding ``ts``: an integer epoch second, equal across processes."""
        return int(math.floor(ts / self.bucket_width_s)) * self.bucket_width_s

    def record_retry(self, *, role: str, model: str, wait_s: float, ts: float) -> None:
        """One 429 that will be retried after ``wait_s``."""
        with self._lock:
            for counters in self._rows(role, model, ts):
                counters.rate_limit_retries += 1
                counters.rate_limit_wait_s += wait_s
                counters._window(ts)

    def record_success(
        self, *, role: str, model: str, duration_s: float, prompt_tokens: int, completion_tokens: int, ts: float
    ) -> None:
        """One successful call and what it carried."""
        with self._lock:
            for counters in self._rows(role, model, ts):
                counters.successes += 1
                counters.duration_s += duration_s
                counters.prompt_tokens += prompt_tokens
                counters.completion_tokens += completion_tokens

    def _rows(self, role: str, model: str, ts: float) -> list[Counters]:
        rows = [self.series.setdefault((role, model), Counters())]
        key = (role, model, self.bucket_start(ts))
        bucket = self.buckets.get(key)
        if bucket is None:
            if len(self.buckets) >= self.max_buckets:
                self.dropped_buckets += 1
                return rows
            bucket = self.buckets[key] = Counters()
        rows.append(bucket)
        return rows

    def totals(self) -> Counters:
        """Every series summed."""
        out = Counters()
        with self._lock:
            for counters in self.series.values():
                out.add(counters)
        return out

    def merge(self, other: ProbeStats) -> None:
        """Sum another census (e.g. a parallel process's) into this one, window by window."""
        if other.bucket_width_s != self.bucket_width_s:
            raise ValueError(f"cannot merge windows of {other.bucket_width_s}s into windows of {self.bucket_width_s}s")
        with self._lock:
            for key, counters in other.series.items():
                self.series.setdefault(key, Counters()).add(counters)
            for bkey, counters in other.buckets.items():
                self.buckets.setdefault(bkey, Counters()).add(counters)
            self.dropped_buckets += other.dropped_buckets

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProbeStats:
        """The census :meth:`to_json` wrote (e.g. one a remote worker sent back with its trial)."""
        fields = [f.name for f in dataclasses.fields(Counters)]
        stats = cls(bucket_width_s=int(data["bucket_width_s"]), dropped_buckets=int(data["dropped_buckets"]))
        for row in data["series"]:
            stats.series[(row["role"], row["model"])] = Counters(**{f: row[f] for f in fields})
        for row in data["buckets"]:
            stats.buckets[(row["role"], row["model"], int(row["bucket_start"]))] = Counters(**{f: row[f] for f in fields})
        return stats

    def to_json(self) -> dict[str, Any]:
        """A JSON-safe snapshot: per-series totals and per-window rows, sorted."""
        with self._lock:
            return {
                "bucket_width_s": self.bucket_width_s,
                "dropped_buckets": self.dropped_buckets,
                "series": [
                    {"role": role, "model": model, **vars(c)} for (role, model), c in sorted(self.series.items())
                ],
                "buckets": [
                    {"role": role, "model": model, "bucket_start": start, **vars(c)}
                    for (role, model, start), c in sorted(self.buckets.items())
                ],
            }
