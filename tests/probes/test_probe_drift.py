"""Drift end to end through the command line, against a provider that changes its mind.

A team's run config names gpt-4o with no temperature of its own, so its plan sends temperature 0
only when a request asks for it. The loopback provider takes temperature 0, then refuses it with
OpenAI's real text (the corpus rule ``openai.temperature_default_only``), then takes it again. The
cycle a scheduled job runs (examples/ci/probe.yml): ``capplan compile`` → ``capplan probe --check``
→ on drift ``capplan probe --out`` → compile with the snippet → ``--check`` agrees → the provider
flips back → ``--check`` names the measurement the plan rests on, and exits 1.
"""

from __future__ import annotations

import datetime
import json
import re
from pathlib import Path

import pytest

from capplan.conformance.corpus import load_corpus
from capplan.executor.plan import Plan
from tests.cli_runner import invoke_checked
from tests.fake_provider import FakeProvider, Reply, Request, openai_answer
from tests.probes.snippet_view import snippet_rules

KEY = "sk-drift-test-0123456789"
RUN = "models:\n  gpt-4o:\n    provider: openai\n    name: gpt-4o\n"


def chat_temperature_text() -> str:
    rule = next(r for r in load_corpus().rules if r.id == "openai.temperature_default_only")
    message: str = rule.error["error"]["message"]
    return message.replace("{value}", "0.0")


TEXT = chat_temperature_text()


class ChangingProvider:
    """A chat route that refuses ``temperature: 0`` while ``refusing`` is set, and takes everything else."""

    def __init__(self) -> None:
        self.refusing = False

    def __call__(self, request: Request) -> Reply | None:
        body = request.body if isinstance(request.body, dict) else {}
        if self.refusing and body.get("temperature") == 0:
            return Reply({"error": {"message": TEXT, "type": "invalid_request_error", "param": "temperature",
                                    "code": "unsupported_value"}}, 400)
        return openai_answer(request)


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    for name in ("LLM_PROXY_BASE_URL", "LLM_PROXY_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(name, raising=False)


def check(plan: Path, api_base: str, expect: int) -> list[str]:
    return invoke_checked("probe", "--check", plan, "--api-base", api_base, expect=expect).stdout.splitlines()


def test_a_provider_that_refuses_then_takes_temperature_zero_is_drift_both_ways(tmp_path: Path) -> None:
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    run = tmp_path / "run.yaml"
    run.write_text(RUN, encoding="utf-8")
    invoke_checked("compile", "--config", run, "--out", tmp_path / "plans", expect=0)
    plan = tmp_path / "plans" / "gpt-4o.json"
    assert Plan.load(plan).request_defaults.temperature is None  # sent only when a request asks for it
    provider = ChangingProvider()
    with FakeProvider(provider) as route:
        # the route takes every value the plan sends: nothing drifted
        assert check(plan, route.base, 0)[-1] == "no drift"
        # the provider changes its mind: the plan still sends temperature 0
        provider.refusing = True
        lines = check(plan, route.base, 1)
        assert f'gpt-4o: temperature 0: route refuses it with 400 {json.dumps(TEXT)}: plan has no rule' in lines
        assert [x for x in lines if not x.startswith("not compared")] == [
            f'gpt-4o: temperature 0: route refuses it with 400 {json.dumps(TEXT)}: plan has no rule', "drift found"]
        # new evidence, and a plan compiled with it
        invoke_checked("probe", plan, "--api-base", route.base, "--out", tmp_path / "evidence", expect=0)
        snippet = tmp_path / "evidence" / "gpt-4o.overlay.yaml"
        assert list(snippet_rules(snippet)) == [("temperature", "0.0")]
        invoke_checked("compile", "--config", run, "--model", "gpt-4o", "--presets-file", snippet,
                       "--out", tmp_path / "ruled", expect=0)
        ruled = tmp_path / "ruled" / "gpt-4o.json"
        rule = Plan.load(ruled).param_value_rules["temperature"]["0.0"]
        assert rule.action == "reject" and rule.evidence is not None and json.dumps(TEXT) in rule.evidence
        assert check(ruled, route.base, 0)[-1] == "no drift"
        # the provider takes temperature 0 again: the plan's dated refusal is what drifted
        provider.refusing = False
        lines = check(ruled, route.base, 1)
        bodies = route.bodies()
    [line] = [x for x in lines if x.startswith("gpt-4o: temperature 0:")]
    assert line == f"gpt-4o: temperature 0: plan says refused (rule reject, evidence: {rule.evidence}), route accepts it today"
    assert line.startswith(f"gpt-4o: temperature 0: plan says refused (rule reject, evidence: {today}, capplan ")
    assert lines[-1] == "drift found"
    # on the wire: five probes, and each asked temperature 0 exactly once (the question that drifted)
    assert [b.get("temperature") for b in bodies].count(0) == 5
    assert {b["model"] for b in bodies} == {"gpt-4o"}


def test_a_route_that_now_refuses_the_plans_own_request_is_one_line_not_a_list(tmp_path: Path) -> None:
    # the bundled gpt-4o plan sends temperature 0 in every request: a refusal of it is a refusal of all
    plan = Path(__file__).resolve().parents[2] / "golden" / "plans" / "gpt-4o.json"
    provider = ChangingProvider()
    provider.refusing = True
    with FakeProvider(provider) as route:
        result = invoke_checked("probe", "--check", plan, "--api-base", route.base, expect=1)
        sent = len(route.bodies())
    assert result.stdout.splitlines() == [
        f"gpt-4o: the plan's own request (max_tokens 16) is refused with 400 {json.dumps(TEXT)}: "
        "no other answer can be compared", "drift found"]
    # every question was still asked, once: a refusal is never retried
    counts = re.search(r"gpt-4o: 0 accepted, (\d+) refused, 0 not measured, 0 skipped", result.stderr)
    assert counts is not None and int(counts.group(1)) == sent > 1
