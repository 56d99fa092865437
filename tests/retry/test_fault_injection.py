"""Fault injection through real litellm against a loopback upstream that fails on script.

No test waits for real: the clock only moves when the controller sleeps.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from capplan.executor.client import Client
from capplan.executor.errors import AllApiKeysExhausted
from capplan.executor.loop_errors import LoopErrorReason
from capplan.executor.plan import Plan
from capplan.executor.probe import RateLimitProbeConfig
from capplan.executor.probe_stats import ProbeStats
from tests.executor.plans import make_plan
from tests.fake_provider import FakeProvider, Request
from tests.retry.conftest import FakeClock

USER = {"messages": [{"role": "user", "content": "hi"}]}
PATTERNS = (
    r"\bRateLimitError\b",
    r"(?i)(?:error\s+code|status(?:[\s_-]*code)?|http(?:/[\d.]+)?)\s*[:=]?\s*429(?!\d)",
    r"(?i)\btoo\s+many\s+requests\b",
)
KEY_LIMIT = (429, {"error": {"message": "Key limit exceeded (weekly limit)", "code": 429}})
BUSY = (429, {"error": {"message": "upstream busy", "type": "rate_limit", "code": 429}})
DOWN = (500, {"error": {"message": "upstream exploded", "code": 500}})


def plan_at(upstream: FakeProvider, provider: str = "openai", name: str = "fault-model") -> Plan:
    plan = make_plan(provider, name)
    body = plan.body()
    body["binding"]["binding"] = {**body["binding"]["binding"], "endpoint": upstream.base,
                                  "rate_limit_patterns": list(PATTERNS)}
    return Plan.seal(body)


def client(upstream: FakeProvider, clock: FakeClock, *, provider: str = "openai", name: str = "fault-model",
           env: dict[str, str] | None = None, probe: RateLimitProbeConfig | None = None, **kw: Any) -> Client:
    return Client(plan_at(upstream, provider, name), env=env if env is not None else {"OPENAI_API_KEY": "sk-o"},
                  sleep=clock.sleep, clock=clock, wall_clock=clock, rate_limit_probe=probe, **kw)


def first(n: int, answer: tuple[int, Any]) -> Any:
    counter = itertools.count()
    return lambda seen: answer if next(counter) < n else None


PROBE = RateLimitProbeConfig(enabled=True, retry_interval_s=15.0, jitter_fraction=0.2, per_call_budget_s=900.0)


def test_per_key_429_rotates_until_a_key_works(fault: FakeProvider, clock: FakeClock) -> None:
    fault.responder = lambda seen: KEY_LIMIT if seen.headers["authorization"] in ("Bearer k-one", "Bearer k-two") else None
    c = client(fault, clock, provider="openrouter", name="vendor/m", env={"OPENROUTER_API_KEYS": "k-one, k-two,k-three"})
    result = c.generate(USER)
    assert result.key_index == 2
    assert [s.headers["authorization"] for s in fault.requests] == ["Bearer k-one", "Bearer k-two", "Bearer k-three"]
    assert clock.sleeps == []  # rotation is immediate; it is not a retry
    again = c.generate(USER)  # the chain only advances: the next call starts on the key that worked
    assert again.key_index == 2 and fault.requests[-1].headers["authorization"] == "Bearer k-three"


def test_spent_chain_raises_typed_and_is_not_retried(fault: FakeProvider, clock: FakeClock, tmp_path: Any) -> None:
    keys = tmp_path / "keys.txt"
    keys.write_text("# team keys\nk-file-1, alice\n\nk-file-2  # spare\n")
    fault.responder = lambda seen: KEY_LIMIT
    c = client(fault, clock, provider="openrouter", name="vendor/m",
               env={"OPENROUTER_KEY_FILE": str(keys)}, probe=PROBE)
    with pytest.raises(AllApiKeysExhausted, match=r"all 2 key\(s\) from OPENROUTER_KEY_FILE") as caught:
        c.generate(USER)
    assert [s.headers["authorization"] for s in fault.requests] == ["Bearer k-file-1", "Bearer k-file-2"]
    assert clock.sleeps == []  # terminal: neither the probe budget nor the exponential applies
    assert c.classify_loop_error(caught.value).reason is LoopErrorReason.API_ERROR
    assert "k-file" not in str(caught.value)


def test_pinned_gateway_key_skips_rotation(fault: FakeProvider, clock: FakeClock) -> None:
    # the "gateway" here is the loopback itself; its catalog read fails (it answers only POST)
    fault.responder = lambda seen: KEY_LIMIT
    env = {"LLM_PROXY_BASE_URL": fault.root, "LLM_PROXY_API_KEY": "sk-gw-pinned", "OPENROUTER_API_KEYS": "k-one,k-two"}
    c = client(fault, clock, provider="openrouter", name="vendor/m", env=env)
    assert c.keys is None
    with pytest.raises(Exception, match=f"LLM gateway at {fault.root} rejected the request"):
        c.generate(USER)
    assert [s.headers["authorization"] for s in fault.requests if s.method == "POST"] == ["Bearer sk-gw-pinned"]


def test_gateway_without_key_still_rotates(fault: FakeProvider, clock: FakeClock) -> None:
    fault.responder = lambda seen: KEY_LIMIT if seen.headers["authorization"] == "Bearer k-one" else None
    env = {"LLM_PROXY_BASE_URL": fault.root, "OPENROUTER_API_KEYS": "k-one,k-two"}
    result = client(fault, clock, provider="openrouter", name="vendor/m", env=env).generate(USER)
    assert (result.key_index, result.gateway_route_kind) == (1, "untranslated")


def test_probe_absorbs_a_429_storm_at_a_jittered_fixed_interval(fault: FakeProvider, clock: FakeClock) -> None:
    fault.responder = first(40, BUSY)
    stats = ProbeStats(bucket_width_s=30)
    result = client(fault, clock, probe=PROBE).generate(USER, role="agent", probe_stats=stats)
    assert result.text == "fault:fault-model"
    assert len(fault.requests) == 41 and len(clock.sleeps) == 40
    assert all(12.0 <= s <= 18.0 for s in clock.sleeps)
    assert abs(sum(clock.sleeps) / 40 - 15.0) < 1.5  # symmetric jitter keeps the mean
    totals = stats.totals()
    assert (totals.rate_limit_retries, totals.successes) == (40, 1)
    assert totals.rate_limit_wait_s == pytest.approx(sum(clock.sleeps))
    assert sum(b.successes for b in stats.buckets.values()) == 1
    assert all(start % 30 == 0 for (_, _, start) in stats.buckets)


def test_probe_gives_up_when_the_call_budget_is_spent(fault: FakeProvider, clock: FakeClock) -> None:
    fault.responder = lambda seen: BUSY
    budget = RateLimitProbeConfig(enabled=True, retry_interval_s=10.0, jitter_fraction=0.0, per_call_budget_s=100.0)
    c = client(fault, clock, probe=budget)
    with pytest.raises(Exception) as caught:
        c.generate(USER)
    assert clock.sleeps == [10.0] * 10 and len(fault.requests) == 11
    assert c.classify_loop_error(caught.value).reason is LoopErrorReason.RATE_LIMIT


def test_default_controller_ignores_probe_telemetry(fault: FakeProvider, clock: FakeClock) -> None:
    fault.responder = first(2, BUSY)
    stats = ProbeStats()
    client(fault, clock).generate(USER, probe_stats=stats)
    assert clock.sleeps == [4, 4]
    assert stats.totals().successes == 0 and stats.totals().rate_limit_retries == 0


def test_5xx_after_a_long_429_stretch_resumes_the_exponential(fault: FakeProvider, clock: FakeClock) -> None:
    counter = itertools.count()
    fault.responder = lambda seen: BUSY if next(counter) < 12 else DOWN
    c = client(fault, clock, probe=RateLimitProbeConfig(enabled=True, retry_interval_s=5.0, jitter_fraction=0.0))
    with pytest.raises(Exception) as caught:
        c.generate(USER)
    assert clock.sleeps[:12] == [5.0] * 12
    # attempt 13 on: the curve at the global attempt number (capped at 60), not a restart at 4
    assert clock.sleeps[12:] == [60, 60, 60, 60]
    assert len(fault.requests) == 12 + 5  # five non-429 attempts, as without the stretch
    assert getattr(caught.value, "status_code", None) == 500


def test_400_whose_body_talks_about_rate_limits_is_not_retried(fault: FakeProvider, clock: FakeClock) -> None:
    body = {"error": {"message": "the user wrote: 'Error code: 429, too many requests, rate limit exceeded'", "code": 400}}
    fault.responder = lambda seen: (400, body)
    c = client(fault, clock, probe=PROBE)
    with pytest.raises(Exception) as caught:
        c.generate(USER)
    assert len(fault.requests) == 1 and clock.sleeps == []
    decision = c.classify_loop_error(caught.value)
    assert decision.reason is LoopErrorReason.API_ERROR and not decision.excluded


def test_wrapper_with_429_text_and_no_status(fault: FakeProvider, clock: FakeClock) -> None:
    import litellm

    calls = itertools.count()

    def wrapped(**kwargs: Any) -> Any:
        if next(calls) < 3:
            raise RuntimeError("LLM API call failed: Error code: 429 - {'error': 'slow down'}")
        return litellm.completion(**kwargs)

    c = client(fault, clock, probe=RateLimitProbeConfig(enabled=True, retry_interval_s=7.0, jitter_fraction=0.0),
               completion=wrapped)
    stats = ProbeStats()
    result = c.generate(USER, probe_stats=stats)
    assert result.text == "fault:fault-model" and clock.sleeps == [7.0, 7.0, 7.0]
    assert stats.totals().rate_limit_retries == 3
    decision = c.classify_loop_error(RuntimeError("LLM API call failed: Error code: 429"))
    assert decision.reason is LoopErrorReason.ERROR and not decision.excluded


def test_transport_timeout_is_retried_then_terminal(fault: FakeProvider, clock: FakeClock) -> None:
    import threading

    # each request is held until the test has its answer, not for a fixed time: a client starved
    # of CPU past a fixed hold would find the answer there and not time out
    released = threading.Event()

    def held(seen: Request) -> None:
        released.wait(timeout=120)
        return None

    fault.responder = held
    plan = plan_at(fault)
    body = plan.body()
    body["loop"] = {**body["loop"], "api_call_timeout_s": 0.2}
    c = Client(Plan.seal(body), env={"OPENAI_API_KEY": "sk-o"}, sleep=clock.sleep, clock=clock, timeout_retries=2)
    try:
        with pytest.raises(Exception) as caught:
            c.generate(USER)
    finally:
        released.set()
    assert type(caught.value).__name__ == "ApiTimeoutError"
    assert "3 attempt(s) (timeout=0.2s)" in str(caught.value)
    assert len(fault.requests) == 3  # the outer controller does not multiply the timeout retry
    assert c.classify_loop_error(caught.value).reason is LoopErrorReason.API_TIMEOUT
