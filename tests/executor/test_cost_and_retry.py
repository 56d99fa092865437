"""Cost with its source, and which failures the retry controller repeats."""

from __future__ import annotations

import pytest
import tenacity

from capplan.executor.cost import priced, response_cost
from capplan.executor.plan import PricingEntry
from capplan.executor.retrying import default_retrying, is_transient
from capplan.executor.usage import Usage

PRICE = PricingEntry(key="x/y", input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)


def test_upstream_usage_cost_is_litellm_sourced() -> None:
    response = {"usage": {"prompt_tokens": 10, "cost": 0.0042}}
    assert response_cost(response, Usage(prompt_tokens=10), PRICE) == (0.0042, "litellm")


def test_hidden_response_cost_is_litellm_sourced() -> None:
    response = {"usage": {"prompt_tokens": 10}, "_hidden_params": {"response_cost": 0.5}}
    assert response_cost(response, Usage(prompt_tokens=10), None) == (0.5, "litellm")


def test_pricing_splits_cache_reads_and_writes_out_of_prompt_tokens() -> None:
    usage = Usage(prompt_tokens=1000, completion_tokens=100, cache_read_input_tokens=600, cache_creation_input_tokens=200)
    expected = (200 * 3.0 + 600 * 0.3 + 200 * 3.75 + 100 * 15.0) / 1_000_000
    assert priced(usage, PRICE) == pytest.approx(expected)
    assert response_cost({"usage": {}}, usage, PRICE) == (pytest.approx(expected), "pricing")


def test_openai_cached_tokens_count_as_cache_reads() -> None:
    usage = Usage(prompt_tokens=100, cached_tokens=40)
    assert priced(usage, PRICE) == pytest.approx((60 * 3.0 + 40 * 0.3) / 1_000_000)


def test_unlisted_cache_rates_charge_the_input_rate() -> None:
    bare = PricingEntry(key="k", input=2.0, output=4.0)
    assert priced(Usage(prompt_tokens=10, cached_tokens=10), bare) == pytest.approx(20 / 1_000_000)


def test_no_cost_anywhere_is_unknown_not_zero() -> None:
    assert response_cost({"usage": {"cost": None}}, Usage(), None) == (None, "unknown")
    assert response_cost({"usage": {"cost": True}}, Usage(), None) == (None, "unknown")


class _Status(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"status {status}")
        self.status_code = status


@pytest.mark.parametrize(("status", "transient"), [(429, True), (500, True), (503, True), (408, True), (400, False), (401, False), (404, False)])
def test_transient_by_status(status: int, transient: bool) -> None:
    assert is_transient(_Status(status)) is transient


def test_plain_errors_are_not_retried() -> None:
    assert not is_transient(ValueError("bad"))


def test_default_controller_five_attempts_exponential_waits() -> None:
    waits: list[float] = []
    calls = 0
    with pytest.raises(_Status):
        for attempt in default_retrying(waits.append):
            with attempt:
                calls += 1
                raise _Status(503)
    assert calls == 5
    assert waits == [4, 4, 8, 16]  # 2 * 2**(n-1), floored at 4


def test_non_transient_fails_at_once() -> None:
    waits: list[float] = []
    calls = 0
    with pytest.raises(_Status):
        for attempt in default_retrying(waits.append):
            with attempt:
                calls += 1
                raise _Status(400)
    assert (calls, waits) == (1, [])


def test_wait_is_capped_at_sixty_seconds() -> None:
    wait = default_retrying(lambda s: None).wait
    state = tenacity.RetryCallState(retry_object=None, fn=None, args=(), kwargs={})  # type: ignore[arg-type]
    state.attempt_number = 10
    assert wait(state) == 60
