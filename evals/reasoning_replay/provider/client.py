"""One measured request: budget, pacing, key, HTTP, retries, parsing, and the two records.

Every request the harness makes goes through :meth:`Client.call`, which appends exactly one
record to ``calls.jsonl`` and one to ``cost.jsonl`` (or raises before sending anything).
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field, replace
from collections.abc import Callable
from typing import Any

from capplan.evals.reasoning_replay.budget import Budget
from capplan.evals.reasoning_replay.outcome import TRANSIENT
from capplan.evals.reasoning_replay.provider import transport
from capplan.evals.reasoning_replay.provider.credentials import KeySource, auth_headers
from capplan.evals.reasoning_replay.provider.lanes import id_prefix, lane_of
from capplan.evals.reasoning_replay.provider.pricing import Price, PriceList, estimate
from capplan.evals.reasoning_replay.provider.ratelimit import RateLimiter
from capplan.evals.reasoning_replay.routes import Route
from capplan.evals.reasoning_replay.store.outdir import OutDir
from capplan.evals.reasoning_replay.wire.base import Parsed, Wire
from capplan.evals.reasoning_replay.wire.knobs import Knobs

RETRYABLE = TRANSIENT - {401}  # a 401 gets the key refresh instead of a blind retry
MAX_BACKOFF_SECONDS = 60.0


@dataclass(frozen=True)
class CallSpec:
    """What to send, and the labels its record is filed under."""

    model: str
    step: str  # params | text | opaque_turn1 | opaque
    position: str
    variant: str
    probe: str
    payload: list[dict[str, Any]]
    knobs: Knobs
    max_tokens: int
    extra: dict[str, Any] | None = None
    attempt: int = 0
    cell: str = ""
    tool_choice: str | None = None  # turn 1 only: auto | required | tool, as sent

    def again(self, attempt: int) -> CallSpec:
        """The same request as another sample (lane resampling)."""
        return replace(self, attempt=attempt)


@dataclass
class Result:
    """The record written for a call, and the JSON body when the call succeeded."""

    record: dict[str, Any]
    body: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return bool(self.record.get("ok"))


@dataclass
class Client:
    """Sends requests for one route into one output folder."""

    route: Route
    wire: Wire
    keys: KeySource
    budget: Budget
    limiter: RateLimiter
    out: OutDir
    prices: PriceList
    canary: str
    run_id: str
    retries: int = 2
    timeout: float = 180.0

    def call(self, spec: CallSpec, annotate: Callable[[dict[str, Any]], dict[str, Any]] | None = None
             ) -> Result:
        """Send ``spec`` once (plus transport retries); raises BudgetExhausted before sending."""
        body = self.wire.body(spec.model, spec.payload, spec.knobs, spec.max_tokens, spec.extra)
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        price = self.prices.lookup(spec.model)
        # Worst case: every ~3 bytes of body a prompt token, and the whole output allowance used.
        worst = estimate(price, len(data) // 3 + 1, spec.max_tokens)
        self.budget.reserve(worst)
        try:
            reply = self._exchange(self.wire.path(spec.model), data)
        except BaseException:
            self.budget.release(worst)
            raise
        parsed: Parsed = Parsed()
        extra: dict[str, Any] = {}
        if reply.ok and reply.body is not None:
            try:
                parsed = self.wire.parse(reply.body)
                extra = annotate(reply.body) if annotate is not None else {}
            except (AttributeError, TypeError, ValueError, KeyError, IndexError) as exc:
                # A 200 in a shape we cannot read is recorded as such, never lost to a crash.
                reply.error = f"unexpected response shape ({type(exc).__name__}: {exc})"
                reply.body = None
        usd, source = self._cost(price, parsed, reply, worst)
        record = self._record(spec, reply, parsed, data, usd, source)
        record.update(extra)
        self.budget.settle(worst, {"t": record["t"], "run": self.run_id, "route": self.route.name,
                                   "model": spec.model, "step": spec.step, "status": reply.status,
                                   "usd": usd, "source": source})
        self.out.calls.append(record)
        return Result(record, reply.body if reply.ok else None)

    def _exchange(self, path: str, data: bytes) -> transport.Reply:
        url = self.route.base_url.rstrip("/") + path
        key = self.keys.read()
        refreshed = False
        attempt = 0
        while True:
            self.limiter.wait()
            reply = transport.send("POST", url, data, self._headers(key), self.timeout)
            if reply.status == 401 and not refreshed:
                refreshed = True
                fresh = self.keys.refresh(key)
                if fresh is not None:
                    key = fresh
                    continue
            if reply.status in RETRYABLE and attempt < self.retries:
                time.sleep(_backoff(reply, attempt))
                attempt += 1
                continue
            return reply

    def _headers(self, key: str) -> dict[str, str]:
        return {"Content-Type": "application/json", "User-Agent": "capplan-reasoning-replay/1",
                **auth_headers(self.route, key)}

    def _cost(self, price: Price, parsed: Parsed, reply: transport.Reply, worst: float
              ) -> tuple[float, str]:
        if parsed.provider_cost is not None:
            return parsed.provider_cost, "provider"
        if not reply.ok:
            # An unreadable 2xx may still have been billed; errors are not.
            return (worst, "unreadable-worst-case") if 200 <= reply.status < 300 else (0.0, "not-billed")
        if parsed.prompt_tokens is None:
            return worst, "no-usage-worst-case"
        output = (parsed.completion_tokens or 0)
        if self.route.kind == "gemini":  # Gemini counts thoughts apart from candidates
            output += parsed.reasoning_tokens or 0
        return estimate(price, parsed.prompt_tokens, output), price.source

    def _record(self, spec: CallSpec, reply: transport.Reply, parsed: Parsed, data: bytes,
                usd: float, source: str) -> dict[str, Any]:
        canary = self.canary.lower()
        error = reply.error
        if reply.ok and parsed.prompt_tokens is None:
            error = "response has no usage (prompt token count missing)"
        return {
            "t": round(time.time(), 3), "run": self.run_id, "cell": spec.cell,
            "route": self.route.name, "model": spec.model, "step": spec.step,
            "position": spec.position, "variant": spec.variant, "probe": spec.probe,
            "attempt": spec.attempt, "effort": spec.knobs.effort, "status": reply.status,
            "ok": reply.ok, "lane": lane_of(self.route, parsed.response_id, reply.status),
            "id_prefix": id_prefix(parsed.response_id), "provider": parsed.provider,
            "prompt_tokens": parsed.prompt_tokens, "completion_tokens": parsed.completion_tokens,
            "reasoning_tokens": parsed.reasoning_tokens, "cached_tokens": parsed.cached_tokens,
            "cost": usd, "cost_source": source, "error": error,
            "answer": parsed.answer[:200],
            "canary_in_answer": canary in parsed.answer.lower(),
            "canary_in_reasoning": canary in parsed.reasoning_text.lower(),
            "fingerprint": parsed.fingerprint, "tool_choice": spec.tool_choice,
            "request_sha256": hashlib.sha256(data).hexdigest(), "request_bytes": len(data),
            "seconds": round(reply.seconds, 3),
        }


def _backoff(reply: transport.Reply, attempt: int) -> float:
    retry_after = reply.headers.get("Retry-After") or reply.headers.get("retry-after") or ""
    try:
        wait = float(retry_after)
    except ValueError:
        wait = 2.0 * (2 ** attempt)
    return max(0.0, min(wait, MAX_BACKOFF_SECONDS))
