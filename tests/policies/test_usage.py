"""Usage accounting and the OpenRouter generation id, on dicts, on objects, and through real litellm."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
from tests.fake_provider import FakeProvider, Reply, import_litellm

from capplan.executor.usage import Usage, UsageExtractor, extract_openrouter_generation_id

FIXTURES = Path(__file__).parent / "fixtures"


def fixture(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return data


@pytest.fixture(scope="module")
def llm() -> Iterator[tuple[ModuleType, FakeProvider]]:
    litellm = import_litellm()
    with FakeProvider() as server:
        yield litellm, server


# --- Usage arithmetic ------------------------------------------------------------------------


def test_usage_adds_field_wise_and_keeps_the_latest_raw_block() -> None:
    first = Usage(1, 2, 3, 4, 5, 6, provider_raw={"call": 1})
    second = Usage(10, 20, 30, 40, 50, 60, provider_raw={"call": 2})
    total = Usage() + first + second
    assert total == Usage(11, 22, 33, 44, 55, 66, provider_raw={"call": 2})
    assert (second + first).provider_raw == {"call": 1}


def test_usage_refuses_to_add_anything_else() -> None:
    assert Usage().__add__(3) is NotImplemented
    with pytest.raises(TypeError):
        Usage() + 3
    with pytest.raises(TypeError):
        Usage() + {"prompt_tokens": 1}


def test_usage_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        Usage().prompt_tokens = 3  # type: ignore[misc]


# --- UsageExtractor on plain response bodies -------------------------------------------------


def test_openrouter_anthropic_usage_surfaces_cache_write_tokens() -> None:
    body = fixture("openrouter_anthropic_usage.json")
    usage = UsageExtractor().extract(body)
    assert usage.cache_creation_input_tokens == 250  # nested cache_write_tokens, top level absent
    assert usage.cached_tokens == 1800
    assert usage.cache_read_input_tokens == 0  # OpenRouter reports reads as cached_tokens only
    assert (usage.prompt_tokens, usage.completion_tokens, usage.reasoning_tokens) == (2100, 50, 30)
    assert usage.provider_raw == body["usage"]  # cost and every other key kept verbatim


def test_direct_anthropic_counters_come_from_the_top_level() -> None:
    usage = UsageExtractor().extract(
        {"usage": {"prompt_tokens": 310, "completion_tokens": 5, "cache_creation_input_tokens": 100,
                   "cache_read_input_tokens": 200, "prompt_tokens_details": {"cached_tokens": 200}}}
    )
    assert (usage.cache_creation_input_tokens, usage.cache_read_input_tokens, usage.cached_tokens) == (100, 200, 200)


@pytest.mark.parametrize(
    ("top", "nested", "expected"),
    [
        ({"cache_creation_input_tokens": 7, "cache_read_input_tokens": 9}, {"cache_write_tokens": 70, "cache_read_tokens": 90}, (7, 9)),
        ({"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}, {"cache_write_tokens": 70, "cache_read_tokens": 90}, (70, 90)),
        ({}, {"cache_write_tokens": 70, "cache_read_tokens": 90}, (70, 90)),
        ({"cache_creation_input_tokens": 7}, {"cache_read_tokens": 0}, (7, 0)),
    ],
)
def test_top_level_cache_counters_take_precedence(top: dict[str, int], nested: dict[str, int], expected: tuple[int, int]) -> None:
    usage = UsageExtractor().extract({"usage": {**top, "prompt_tokens_details": nested}})
    assert (usage.cache_creation_input_tokens, usage.cache_read_input_tokens) == expected


def test_objects_are_read_through_attributes() -> None:
    usage = SimpleNamespace(
        prompt_tokens=5,
        completion_tokens=6,
        completion_tokens_details=SimpleNamespace(reasoning_tokens=2),
        prompt_tokens_details=SimpleNamespace(cached_tokens=1, cache_write_tokens=3),
    )
    got = UsageExtractor().extract(SimpleNamespace(usage=usage))
    assert (got.prompt_tokens, got.completion_tokens, got.reasoning_tokens, got.cached_tokens) == (5, 6, 2, 1)
    assert got.cache_creation_input_tokens == 3
    assert got.provider_raw["prompt_tokens_details"] == {"cached_tokens": 1, "cache_write_tokens": 3}


@pytest.mark.parametrize("response", [None, {}, {"usage": None}, SimpleNamespace(), "not a response", 42])
def test_missing_usage_reads_as_zero(response: Any) -> None:
    assert UsageExtractor().extract(response) == Usage()


@pytest.mark.parametrize("bad", ["12", -3, True, float("nan"), float("inf"), 1.5, 1e308, 10**9 + 1, "NaN",
                                 {"n": 1}, [1]])
def test_counters_out_of_bounds_are_unknown_and_stay_in_the_raw_block(bad: Any, caplog: pytest.LogCaptureFixture) -> None:
    body = {"usage": {"prompt_tokens": bad, "completion_tokens": 4, "prompt_tokens_details": {"cached_tokens": bad}}}
    with caplog.at_level(logging.WARNING, logger="capplan.usage"):
        usage, problems = UsageExtractor().extract_checked(body)
    assert (usage.prompt_tokens, usage.cached_tokens, usage.completion_tokens) == (None, None, 4)
    assert usage.unknown() == ("prompt_tokens", "cached_tokens")
    assert [p.split(" is ")[0] for p in problems] == ["usage.prompt_tokens", "usage.prompt_tokens_details.cached_tokens"]
    assert all(p.endswith(": the count is unknown") for p in problems)
    assert "usage.prompt_tokens is" in caplog.text
    assert "prompt_tokens" in usage.provider_raw
    json.dumps(usage.provider_raw)  # JSON-safe whatever came in


def test_the_largest_believable_count_is_kept() -> None:
    usage, problems = UsageExtractor().extract_checked({"usage": {"prompt_tokens": 10**9, "completion_tokens": 0}})
    assert (usage.prompt_tokens, problems) == (10**9, ())


def test_an_unknown_counter_makes_every_sum_it_is_in_unknown() -> None:
    total = Usage(prompt_tokens=3, completion_tokens=None) + Usage(prompt_tokens=4, completion_tokens=5)
    assert (total.prompt_tokens, total.completion_tokens) == (7, None)


def test_integral_floats_count() -> None:
    assert UsageExtractor().extract({"usage": {"prompt_tokens": 12.0}}).prompt_tokens == 12


def test_a_raising_usage_object_does_not_fail_the_call() -> None:
    class Exploding:
        @property
        def prompt_tokens(self) -> int:
            raise RuntimeError("boom")

        def model_dump(self) -> dict[str, Any]:
            raise RuntimeError("boom")

    usage = UsageExtractor().extract({"usage": Exploding()})
    assert usage.prompt_tokens == 0 and "unreadable" in usage.provider_raw


# --- OpenRouter generation id ----------------------------------------------------------------


def with_headers(headers: Any) -> SimpleNamespace:
    return SimpleNamespace(_hidden_params={"additional_headers": headers})


@pytest.mark.parametrize(
    "key", ["llm_provider-x-generation-id", "LLM_PROVIDER-X-Generation-Id", "x-generation-id", "X-GENERATION-ID"]
)
def test_generation_id_is_read_with_prefix_stripped_and_case_folded(key: str) -> None:
    assert extract_openrouter_generation_id(with_headers({"llm_provider-date": "today", key: "gen-42"})) == "gen-42"


def test_the_plausible_longer_header_name_is_not_the_generation_id() -> None:
    assert extract_openrouter_generation_id(with_headers({"llm_provider-x-openrouter-generation-id": "gen-42"})) is None


@pytest.mark.parametrize(
    "response",
    [
        with_headers({}),
        with_headers(None),
        with_headers({"llm_provider-x-generation-id": ""}),
        with_headers({"llm_provider-x-generation-id": 42}),
        SimpleNamespace(),
        SimpleNamespace(_hidden_params=None),
        {"_hidden_params": {"additional_headers": {"llm_provider-x-generation-id": "gen-7"}}},
    ],
)
def test_generation_id_absent_or_malformed(response: Any) -> None:
    expected = "gen-7" if isinstance(response, dict) else None
    assert extract_openrouter_generation_id(response) == expected


# --- through real litellm --------------------------------------------------------------------


def test_openrouter_route_through_litellm(llm: tuple[ModuleType, FakeProvider]) -> None:
    litellm, server = llm
    body = fixture("openrouter_anthropic_usage.json")
    server.routes["/chat/completions"] = Reply(
        body, headers={"X-Generation-Id": "gen-1764450000-usage", "X-OpenRouter-Generation-Id": "wrong"}
    )
    response = litellm.completion(
        model="openrouter/anthropic/claude-sonnet-4.5", api_base=server.base, api_key="k",
        messages=[{"role": "user", "content": "hi"}],
    )
    assert extract_openrouter_generation_id(response) == "gen-1764450000-usage"
    usage = UsageExtractor().extract(response)  # litellm's own Usage object
    assert (usage.prompt_tokens, usage.completion_tokens, usage.reasoning_tokens) == (2100, 50, 30)
    assert (usage.cached_tokens, usage.cache_creation_input_tokens, usage.cache_read_input_tokens) == (1800, 250, 0)
    assert usage.provider_raw["cost"] == 0.0123
    json.dumps(usage.provider_raw)


def test_anthropic_route_through_litellm(llm: tuple[ModuleType, FakeProvider]) -> None:
    litellm, server = llm
    server.routes["/v1/messages"] = fixture("reasoning_anthropic_messages_response.json")
    response = litellm.completion(
        model="anthropic/claude-sonnet-4-5", api_base=server.root, api_key="k",
        messages=[{"role": "user", "content": "hi"}], max_tokens=64,
    )
    usage = UsageExtractor().extract(response)
    # litellm folds cache reads and writes into prompt_tokens on this route
    assert usage.prompt_tokens == 12 + 1500 + 3000
    assert (usage.cache_creation_input_tokens, usage.cache_read_input_tokens) == (1500, 3000)
    assert extract_openrouter_generation_id(response) is None
