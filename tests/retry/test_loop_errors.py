"""Rate-limit classification and ``classify_loop_error``: typed evidence excludes a trial, prose
never does, an authoritative non-429 status beats text, and a spent key chain is terminal."""

from __future__ import annotations

from pathlib import Path

import httpx
import openai
import pytest

from capplan.executor.client import Client
from capplan.executor.errors import AllApiKeysExhausted, ApiTimeoutError
from capplan.executor.loop_errors import LoopErrorReason, classify_loop_error
from capplan.executor.plan import Plan
from capplan.executor.rate_limit import compile_patterns, is_transient_rate_limit, is_typed_rate_limit_exception

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "plans"
PATTERNS = compile_patterns(Plan.load(GOLDEN / "claude-opus-4.7-openrouter.json").binding.binding.rate_limit_patterns)


def _openai_429() -> openai.RateLimitError:
    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    response = httpx.Response(429, request=request, json={"error": {"message": "slow down"}})
    return openai.RateLimitError("slow down", response=response, body=None)


class _Status(Exception):
    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status_code = status


def _wrapped(inner: BaseException) -> RuntimeError:
    try:
        raise RuntimeError(f"LLM API call failed: {inner}") from inner
    except RuntimeError as exc:
        return exc


def test_bundled_patterns_are_present() -> None:
    assert len(PATTERNS) >= 3


def test_typed_429_through_a_wrapper_is_a_rate_limit() -> None:
    exc = _wrapped(_openai_429())
    assert is_typed_rate_limit_exception(exc)
    decision = classify_loop_error(exc, PATTERNS)
    assert decision.reason is LoopErrorReason.RATE_LIMIT
    assert decision.excluded
    assert decision.evidence == "RuntimeError <- RateLimitError"


def test_status_429_without_type_is_a_rate_limit() -> None:
    assert classify_loop_error(_wrapped(_Status(429, "quota")), PATTERNS).reason is LoopErrorReason.RATE_LIMIT


def test_spent_key_chain_vetoes_the_429_it_chains() -> None:
    try:
        raise AllApiKeysExhausted("all 3 keys of OPENROUTER_API_KEYS exhausted") from _openai_429()
    except AllApiKeysExhausted as exc:
        spent = exc
    assert not is_typed_rate_limit_exception(spent)
    assert not is_transient_rate_limit(spent, PATTERNS)
    decision = classify_loop_error(_wrapped(spent), PATTERNS)
    assert decision.reason is LoopErrorReason.API_ERROR
    assert not decision.excluded


def test_400_whose_body_talks_about_rate_limits_is_not_a_rate_limit() -> None:
    exc = _wrapped(_Status(400, 'Error code: 400 - user said "I hit a rate limit exceeded error, too many requests"'))
    assert not is_transient_rate_limit(exc, PATTERNS)
    decision = classify_loop_error(exc, PATTERNS)
    assert decision.reason is LoopErrorReason.API_ERROR
    assert not decision.excluded


def test_stringified_429_retries_but_never_excludes() -> None:
    exc = RuntimeError("LLM API call failed: Error code: 429 - {'error': 'busy'}")
    assert is_transient_rate_limit(exc, PATTERNS)
    decision = classify_loop_error(exc, PATTERNS)
    assert decision.reason is LoopErrorReason.ERROR
    assert not decision.excluded
    assert "no typed provider exception" in decision.message


@pytest.mark.parametrize("text", ["you requested 4429 tokens", "request req_8f429ab2 failed", '{"n": 429}'])
def test_unanchored_429_does_not_match(text: str) -> None:
    assert not is_transient_rate_limit(RuntimeError(text), PATTERNS)


def test_timeout_is_excluded_with_evidence() -> None:
    try:
        raise ApiTimeoutError("timed out after 3 attempts (timeout=1.0s)") from TimeoutError("read")
    except ApiTimeoutError as exc:
        decision = classify_loop_error(exc, PATTERNS)
    assert decision.reason is LoopErrorReason.API_TIMEOUT
    assert decision.excluded
    assert decision.evidence == "ApiTimeoutError <- TimeoutError"


def test_plain_bug_is_an_error() -> None:
    decision = classify_loop_error(KeyError("x"), PATTERNS)
    assert decision.reason is LoopErrorReason.ERROR
    assert not decision.excluded


def test_cause_cycle_terminates() -> None:
    a, b = RuntimeError("a"), RuntimeError("b")
    a.__cause__, b.__cause__ = b, a
    assert classify_loop_error(a, PATTERNS).reason is LoopErrorReason.ERROR


def test_client_binds_its_plan_patterns() -> None:
    client = Client(Plan.load(GOLDEN / "claude-opus-4.7-openrouter.json"))
    exc = RuntimeError("LLM API call failed: Error code: 429")
    assert "no typed provider exception" in client.classify_loop_error(exc).message
    bare = Client(Plan.load(GOLDEN / "mock-echo.json"))  # mock declares no patterns
    assert bare.classify_loop_error(exc).message.startswith("Error: ")
