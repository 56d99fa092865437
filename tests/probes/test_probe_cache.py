"""``capplan probe`` cache question: the plan's own request with a cacheable prefix, sent twice.

The routes are loopback emulators (``tests/probes/route_emulators.py``): one caches a prefix of at
least 1024 tokens and reports ``prompt_tokens_details.cached_tokens`` on the repeat, as OpenAI
does; one never caches; one is a relay that adds breakpoints of its own and refuses a fifth with
Anthropic's text. Plans: the bundled gpt-4o (automatic caching, a cached-input price) and
claude-sonnet-4.6 on OpenRouter (Anthropic markers). Each test sends two requests or fewer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli_runner import invoke_checked
from tests.fake_provider import FakeProvider, chat_completion, error_body, json_reply, rate_limited
from tests.probes.route_emulators import CACHE_MIN_TOKENS, TOO_MANY_BREAKPOINTS, CacheRoute

KEY = "sk-probe-cache-0123456789"
GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "plans"
GPT4O = GOLDEN / "gpt-4o.json"
CLAUDE = GOLDEN / "claude-sonnet-4.6-openrouter.json"


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENROUTER_API_KEY", KEY)
    for name in ("LLM_PROXY_BASE_URL", "LLM_PROXY_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def routes() -> Iterator[dict[str, FakeProvider]]:
    servers = {"caches": FakeProvider(CacheRoute()).start(), "ignores": FakeProvider(CacheRoute(honour=False)).start(),
               "relay": FakeProvider(CacheRoute(relay_markers=3)).start()}
    try:
        yield servers
    finally:
        for server in servers.values():
            server.close()


def probe(plan: Path, server: FakeProvider, *args: Any, expect: int = 0) -> tuple[str, list[Any]]:
    """Probe the cache question of ``plan`` on ``server``; the output and the requests it received."""
    before = len(server.posts())
    result = invoke_checked("probe", "--family", "cache", plan, "--api-base", server.base, *args, expect=expect)
    return result.output, server.posts()[before:]


def cache_of(out: Path, key: str) -> dict[str, Any]:
    record: dict[str, Any] = json.loads((out / f"{key}.probe.json").read_text(encoding="utf-8"))["cache"]
    return record


def test_a_route_that_caches_reports_cached_tokens_on_the_repeat(routes: dict[str, FakeProvider],
                                                                 tmp_path: Path) -> None:
    _, received = probe(GPT4O, routes["caches"], "--out", tmp_path)
    assert len(received) == 2 and received[0].raw == received[1].raw  # the same request, twice
    system = received[0].body["messages"][0]
    assert system["role"] == "system" and len(system["content"]) // 4 >= CACHE_MIN_TOKENS
    found = cache_of(tmp_path, "gpt-4o")
    assert (found["first"]["outcome"], found["cached_verdict"]) == ("accepted", "cached")
    assert found["cached_tokens"] > 0 and found["markers_verdict"] == "none sent"
    agreed = invoke_checked("probe", "--family", "cache", "--check", GPT4O, "--api-base", routes["caches"].base, expect=0)
    assert "no drift" in agreed.output


def test_a_responses_route_reports_them_under_input_tokens_details(routes: dict[str, FakeProvider],
                                                                   tmp_path: Path) -> None:
    _, received = probe(GOLDEN / "gpt-5.json", routes["caches"], "--out", tmp_path)
    assert [r.path for r in received] == ["/v1/responses"] * 2
    assert len(received[0].body["instructions"]) // 4 >= CACHE_MIN_TOKENS
    found = cache_of(tmp_path, "gpt-5")
    assert found["cached_verdict"] == "cached" and found["cached_tokens"] > 0


def test_a_route_that_never_caches_is_drift_for_a_plan_that_prices_cached_input(
        routes: dict[str, FakeProvider]) -> None:
    output, received = probe(GPT4O, routes["ignores"], "--check", expect=1)
    assert len(received) == 2
    assert ("gpt-4o: cached tokens: the plan prices cached input at $1.25/M tokens (read from usage cached tokens), "
            "route reports 0 cached tokens on the repeat call today (prefix of at least 1024 tokens)") in output


def test_anthropic_markers_go_out_and_are_accepted(routes: dict[str, FakeProvider], tmp_path: Path) -> None:
    _, received = probe(CLAUDE, routes["caches"], "--out", tmp_path)
    assert len(received) == 2
    markers = [part for m in received[0].body["messages"] if isinstance(m["content"], list)
               for part in m["content"] if "cache_control" in part]
    assert len(markers) == 2  # the system block and the user tail, as the plan's cache policy places them
    found = cache_of(tmp_path, "claude-sonnet-4.6-openrouter")
    assert (found["markers_verdict"], found["cached_verdict"], found["min_tokens"]) == ("accepted", "cached", 4096)


def test_refused_markers_are_recorded_with_the_exact_text_and_the_repeat_is_not_sent(
        routes: dict[str, FakeProvider], tmp_path: Path) -> None:
    _, received = probe(CLAUDE, routes["relay"], "--out", tmp_path)
    assert len(received) == 1
    found = cache_of(tmp_path, "claude-sonnet-4.6-openrouter")
    assert found["markers_verdict"] == "refused"
    assert (found["first"]["status"], found["first"]["detail"]) == (400, TOO_MANY_BREAKPOINTS.format(count=5))
    assert found["repeat"] is None and found["cached_verdict"] == "not measured"
    output, _ = probe(CLAUDE, routes["relay"], "--check", expect=1)
    assert ('claude-sonnet-4.6-openrouter: cache markers: the plan places 2 cache_control marker(s) (cache_policy '
            'anthropic_ephemeral), route refuses it with 400 "A maximum of 4 blocks with cache_control may be '
            'provided. Found 5."') in output


@pytest.mark.parametrize(("replies", "sent", "reason"), [
    ([rate_limited("1")], 1, "HTTP 429, rate limited"),
    ([json_reply(chat_completion("OK")),
      json_reply(error_body("The server had an error while processing your request.", type="server_error"), 500)],
     2, "HTTP 500"),
])
def test_429_and_500_are_not_measured_never_retried_and_never_drift(replies: list[Any], sent: int, reason: str) -> None:
    with FakeProvider(CacheRoute(honour=False)) as server:
        server.script(*replies)
        output, received = probe(GPT4O, server, "--check", expect=0)
    assert len(received) == sent
    assert "no drift" in output and "not compared: gpt-4o: cache" in output and reason in output


def test_the_budget_reserves_both_calls_before_the_first(routes: dict[str, FakeProvider], tmp_path: Path) -> None:
    server = routes["caches"]
    dry = invoke_checked("probe", "--dry-run", "--family", "cache", GPT4O, "--api-base", server.base, expect=0).output
    lines = re.findall(r"cache:(first|repeat): .* sha256:([0-9a-f]{64}) worst case \$([0-9.]+)", dry)
    assert [name for name, _, _ in lines] == ["first", "repeat"] and lines[0][1:] == lines[1][1:]
    one = float(lines[0][2])
    total = re.findall(r"2 request\(s\) planned, worst-case cost \$([0-9.]+)", dry)
    assert total and float(total[0]) == pytest.approx(2 * one, abs=2e-6)  # both calls, each printed rounded
    _, received = probe(GPT4O, server, "--out", tmp_path, "--max-requests", "1")
    assert received == [] and "over budget" in cache_of(tmp_path, "gpt-4o")["stopped"]
    _, received = probe(GPT4O, server, "--out", tmp_path, "--max-cost", repr(one * 1.5))
    assert received == [] and "--max-cost" in cache_of(tmp_path, "gpt-4o")["stopped"]
