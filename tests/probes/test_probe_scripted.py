"""``capplan probe`` against a scripted loopback route: faults, budgets, the dry run, hostile bodies, bad input.

The route is the tests' :class:`~tests.fake_provider.FakeProvider`: it records every request and
answers the next scripted reply, so each test knows exactly what was sent and how often.
The plan is the bundled gpt-4o (OpenAI chat completions, direct transport).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from capplan.compiler.compile import compile_paths
from capplan.core.canonical import canonical_bytes, sha256_hex
from capplan.executor.client import Client
from capplan.executor.plan import Plan
from capplan.probes.evidence import MAX_ERROR_CHARS
from capplan.probes.runner import plan_probe
from tests.cli_runner import invoke_checked
from tests.fake_provider import FakeProvider, Reply, chat_completion, error_body, json_reply

KEY = "sk-probe-scripted-0123456789"
GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "plans"
GPT4O = GOLDEN / "gpt-4o.json"


def ok() -> Reply:
    return json_reply(chat_completion("OK"))


def refusal(message: str, status: int = 400) -> Reply:
    return json_reply(error_body(message), status)


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    for name in ("LLM_PROXY_BASE_URL", "LLM_PROXY_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def route() -> Iterator[FakeProvider]:
    with FakeProvider() as server:
        yield server


def sent_ids(server: FakeProvider) -> list[str]:
    """The ids of the gpt-4o questions that are sent, in order (from the plan of the probe itself)."""
    client = Client(Plan.load(GPT4O), api_base=server.base, env={"OPENAI_API_KEY": KEY})
    return [p.question.id for p in plan_probe(client).to_send]


def script_by_id(server: FakeProvider, answers: dict[str, Reply]) -> list[str]:
    """Script one answer per sent question: ``answers[id]``, else a success. Returns the ids in order."""
    ids = sent_ids(server)
    server.script(*[answers.get(qid) or ok() for qid in ids])
    return ids


def record_of(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "gpt-4o.probe.json").read_text(encoding="utf-8"))
    return data


def by_id(record: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {q["id"]: q for q in record["questions"]}


def test_429_and_500_are_not_measured_and_a_400_is_asked_once(route: FakeProvider, tmp_path: Path) -> None:
    ids = script_by_id(route, {
        "temperature=0": json_reply({"error": {"message": "Rate limit reached"}}, 429, {"Retry-After": "1"}),
        "seed=1": json_reply({"error": {"message": "upstream exploded"}}, 500),
        "tool_choice=required": refusal("tool_choice 'required' is not supported by this deployment"),
        "parallel_tool_calls=false": refusal("parallel_tool_calls: false is not supported"),
    })
    invoke_checked("probe", GPT4O, "--api-base", route.base, "--out", tmp_path, expect=0)
    # one request per question: nothing was retried, neither the 429 nor the 500 nor the refusal
    assert len(route.posts()) == len(ids)
    assert [s.body.get("tool_choice") for s in route.posts()].count("required") == 1
    found = by_id(record_of(tmp_path))
    assert (found["temperature=0"]["outcome"], found["temperature=0"]["status"]) == ("not measured", 429)
    assert "rate limited" in found["temperature=0"]["detail"]
    assert (found["seed=1"]["outcome"], found["seed=1"]["status"]) == ("not measured", 500)
    assert found["tool_choice=required"]["outcome"] == "refused"
    assert found["tool_choice=required"]["detail"] == "tool_choice 'required' is not supported by this deployment"
    # only the refusal becomes a rule; the 429 and the 500 claim nothing
    snippet = (tmp_path / "gpt-4o.overlay.yaml").read_text(encoding="utf-8")
    assert "tool_choice" in snippet and "temperature" not in snippet.split("probe_evidence:")[1] and "seed" not in snippet
    compiled = compile_paths(data_dir=None, run_config=None, overlays=[tmp_path / "gpt-4o.overlay.yaml"], model="gpt-4o")
    rules = compiled.plans["gpt-4o"].param_value_rules
    assert rules["tool_choice"]["required"].action == "reject"
    assert rules["parallel_tool_calls"]["false"].action == "reject"  # a boolean key reads back as the boolean


def test_check_names_a_refusal_the_plan_has_no_rule_for_and_lists_what_it_could_not_measure(
        route: FakeProvider) -> None:
    script_by_id(route, {"parallel_tool_calls=false": refusal("parallel_tool_calls is not supported"),
                         "temperature=0": json_reply({"error": {"message": "overloaded"}}, 503)})
    result = invoke_checked("probe", "--check", GPT4O, "--api-base", route.base, expect=1)
    assert ('gpt-4o: parallel_tool_calls false: route refuses it with 400 "parallel_tool_calls is not supported": '
            "plan has no rule") in result.output
    assert "not compared: gpt-4o: temperature 0: not measured (HTTP 503" in result.output
    assert "temperature 0: route refuses" not in result.output  # not measured is never drift


def test_a_refused_baseline_writes_no_rule(route: FakeProvider, tmp_path: Path) -> None:
    script_by_id(route, {"max_tokens=16": refusal("Invalid URL (POST /v1/chat/completions)"),
                         "temperature=0": refusal("temperature is not supported")})
    invoke_checked("probe", GPT4O, "--api-base", route.base, "--out", tmp_path, expect=0)
    snippet = (tmp_path / "gpt-4o.overlay.yaml").read_text(encoding="utf-8")
    assert "probe_evidence: []" in snippet and "own request was not accepted" in snippet


def test_max_requests_stops_and_records_what_it_measured(route: FakeProvider, tmp_path: Path) -> None:
    ids = script_by_id(route, {})
    invoke_checked("probe", GPT4O, "--api-base", route.base, "--out", tmp_path, "--max-requests", "3", expect=0)
    assert len(route.posts()) == 3
    record = record_of(tmp_path)
    found = by_id(record)
    assert [found[qid]["outcome"] for qid in ids[:3]] == ["accepted"] * 3
    assert all(found[qid]["outcome"] == "not measured" and "--max-requests 3" in found[qid]["detail"]
               for qid in ids[3:])
    assert record["sent"] == 3 and "over budget" in record["stopped"]


def test_max_cost_stops_before_the_request_that_would_pass_it(route: FakeProvider, tmp_path: Path) -> None:
    client = Client(Plan.load(GPT4O), api_base=route.base, env={"OPENAI_API_KEY": KEY})
    planned = plan_probe(client).to_send
    budget = sum(p.worst_usd or 0.0 for p in planned[:2]) + (planned[2].worst_usd or 0.0) / 2
    script_by_id(route, {})
    invoke_checked("probe", GPT4O, "--api-base", route.base, "--out", tmp_path, "--max-cost", repr(budget), expect=0)
    assert len(route.posts()) == 2
    assert "--max-cost" in record_of(tmp_path)["stopped"]


def test_max_cost_refuses_to_start_for_a_plan_without_a_price(route: FakeProvider, tmp_path: Path) -> None:
    body = Plan.load(GPT4O).body()
    body["pricing"] = None
    unpriced = tmp_path / "gpt-4o.json"
    unpriced.write_bytes(Plan.seal(body).to_bytes())
    result = invoke_checked("probe", unpriced, "--api-base", route.base, "--out", tmp_path / "o", "--max-cost", "1",
                            expect=2)
    assert "--max-cost cannot bound plan(s) gpt-4o: no price" in result.output
    assert route.posts() == []


def test_the_dry_run_sends_nothing_and_prints_the_fingerprints_a_real_run_sends(
        route: FakeProvider, tmp_path: Path) -> None:
    dry = invoke_checked("probe", "--dry-run", GPT4O, "--api-base", route.base, expect=0)
    assert route.posts() == []
    assert "nothing was sent" in dry.output and "worst-case cost $" in dry.output
    script_by_id(route, {})
    invoke_checked("probe", GPT4O, "--api-base", route.base, "--out", tmp_path, expect=0)
    for seen in route.posts():
        fingerprint = sha256_hex(canonical_bytes(seen.body))
        assert f"sha256:{fingerprint}" in dry.output
    assert "  stop=END: openai-chat model gpt-4o sha256:" in dry.output


def test_plan_as_an_option_is_the_plan_as_an_argument(route: FakeProvider) -> None:
    # `--plan PATH`, as trial run and gateway check spell it: the same plans, the same requests
    as_argument = invoke_checked("probe", "--dry-run", GPT4O, "--api-base", route.base, expect=0)
    as_option = invoke_checked("probe", "--dry-run", "--plan", GPT4O, "--api-base", route.base, expect=0)
    assert as_option.output == as_argument.output and "sha256:" in as_option.output
    assert route.posts() == []
    missing = invoke_checked("probe", "--dry-run", "--plan", GOLDEN / "no-such-plan.json", expect=2)
    assert "no-such-plan.json" in missing.output and "Traceback" not in missing.output


def test_a_huge_secret_bearing_error_body_is_bounded_and_redacted(route: FakeProvider, tmp_path: Path) -> None:
    hostile = ("tool_choice required is refused for key " + KEY + " \u2028 \"quoted\"\n" + "x" * 2_000_000)
    script_by_id(route, {"tool_choice=required": refusal(hostile)})
    result = invoke_checked("probe", GPT4O, "--api-base", route.base, "--out", tmp_path, expect=0)
    written = [(tmp_path / name).read_text(encoding="utf-8") for name in ("gpt-4o.probe.json", "gpt-4o.overlay.yaml")]
    for text in [*written, result.output]:
        assert KEY not in text
    detail = by_id(record_of(tmp_path))["tool_choice=required"]["detail"]
    assert detail.startswith("tool_choice required is refused for key <redacted>")
    assert len(detail) < MAX_ERROR_CHARS + 64 and "more characters)" in detail
    # the snippet still reads back as YAML the compiler takes, evidence intact
    compiled = compile_paths(data_dir=None, run_config=None, overlays=[tmp_path / "gpt-4o.overlay.yaml"], model="gpt-4o")
    evidence = compiled.plans["gpt-4o"].param_value_rules["tool_choice"]["required"].evidence
    assert "<redacted>" in evidence and KEY not in evidence


@pytest.mark.parametrize(("args", "message"), [
    (("no-such-plan.json", "--out", "o"), "no such plan file or folder"),
    ((str(GOLDEN / "gpt-4o.json"), "--model", "gpt-4", "--dry-run"), "--model gpt-4: no plan of that model key"),
    ((str(GOLDEN / "mock-echo.json"), "--dry-run"), "the offline mock answers without a route"),
    ((str(GOLDEN / "claude-opus-5.json"), "--dry-run"), "its wire protocol is 'litellm'"),
    ((str(GOLDEN / "gpt-4o.json"),), "--out is required"),
    ((str(GOLDEN / "gpt-4o.json"), "--dry-run", "--check"), "--dry-run sends nothing"),
    ((str(GOLDEN / "gpt-4o.json"), "--max-requests", "0", "--dry-run"), "--max-requests"),
    ((str(GOLDEN / "gpt-4o.json"), "--max-cost", "-1", "--dry-run"), "--max-cost"),
])
def test_bad_input_is_a_located_error_and_exit_2(args: tuple[str, ...], message: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = invoke_checked("probe", *args, expect=2)
    assert message in result.output


def test_a_corrupt_plan_is_a_located_error(tmp_path: Path) -> None:
    broken = tmp_path / "gpt-4o.json"
    broken.write_text(GPT4O.read_text(encoding="utf-8").replace('"gpt-4o"', '"gpt-4o-edited"', 1), encoding="utf-8")
    result = invoke_checked("probe", broken, "--dry-run", expect=2)
    assert str(broken) in result.output and "error[" in result.output


def test_through_the_gateway_the_route_identity_names_it(route: FakeProvider, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    route.catalog = ["openai/gpt-4o"]
    monkeypatch.setenv("LLM_PROXY_BASE_URL", route.base)
    monkeypatch.setenv("LLM_PROXY_API_KEY", "sk-gateway-0123456789")
    invoke_checked("probe", GPT4O, "--dry-run", expect=0)  # reads the catalog, sends no completion
    assert route.posts() == []
    invoke_checked("probe", GPT4O, "--out", tmp_path, "--max-requests", "2", expect=0)
    identity = record_of(tmp_path)["route"]
    assert identity["gateway_route"] == "openai/gpt-4o"
    assert identity["endpoint"] == route.base + "/chat/completions"
    assert [seen.headers["authorization"] for seen in route.posts()] == ["Bearer sk-gateway-0123456789"] * 2
    assert "sk-gateway-0123456789" not in (tmp_path / "gpt-4o.probe.json").read_text(encoding="utf-8")


def test_a_missing_key_is_refused_before_anything_is_sent(route: FakeProvider, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    result = invoke_checked("probe", GPT4O, "--api-base", route.base, "--out", tmp_path, expect=2)
    assert "OPENAI_API_KEY" in result.output
    assert route.posts() == []


#: the body keys each question may change relative to the plan's own request (tools travel with the
#: parameters that only exist beside them)
MAY_CHANGE = {
    "temperature": {"temperature"}, "top_p": {"top_p"}, "seed": {"seed"}, "stop": {"stop"},
    "response_format": {"response_format"}, "tool_choice": {"tools", "tool_choice"},
    "parallel_tool_calls": {"tools", "parallel_tool_calls"},
    "reasoning_effort": {"reasoning_effort", "reasoning", "extra_body"},
    "output_cap_name": {"max_tokens", "max_completion_tokens"}, "tool_schema": {"tools"},
}


def test_each_request_is_the_plans_own_with_only_the_parameter_under_test_changed(
        route: FakeProvider, tmp_path: Path) -> None:
    ids = script_by_id(route, {})
    invoke_checked("probe", GPT4O, "--api-base", route.base, "--out", tmp_path, expect=0)
    bodies = dict(zip(ids, (seen.body for seen in route.posts()), strict=True))
    baseline = bodies[ids[0]]
    assert ids[0] == "max_tokens=16"
    for qid, body in bodies.items():
        param, _, value = qid.partition("=")
        if param == "max_tokens":
            continue
        changed = {key for key in {*baseline, *body} if baseline.get(key) != body.get(key)}
        assert changed <= MAY_CHANGE[param], (qid, changed)
        if param in ("stop", "seed", "response_format", "tool_choice", "parallel_tool_calls"):
            assert param in changed, qid
    assert bodies["tool_choice=named"]["tool_choice"] == {"type": "function", "function": {"name": "echo"}}
    assert bodies["parallel_tool_calls=false"]["parallel_tool_calls"] is False
    # the output cap under the name the plan does not send, and nothing under its own
    assert "max_tokens" not in bodies["output_cap_name=max_completion_tokens"]
    assert bodies["output_cap_name=max_completion_tokens"]["max_completion_tokens"] == 16
    # each tool-schema question's one tool is the plan's sanitised form of the feature's tiny tool
    assert bodies["tool_schema=allOf"]["tools"][0]["function"]["parameters"]["properties"]["value"] == {
        "allOf": [{"type": "string"}]}
    assert bodies["tool_schema=strict+enum"]["tools"][0]["function"]["strict"] is True


def _hostile_plans() -> dict[str, bytes]:
    """Plan files a pull request could plant: each must be a located error before anything is sent."""
    text = GPT4O.read_text(encoding="utf-8")
    planted = json.loads(text)
    planted["binding"]["planted"] = "import os"  # a key no plan has: the model forbids extras
    return {
        "wrong-type": b"[1, 2, 3]\n",
        "huge": b'{"pad": "' + b"x" * (5 * 1024 * 1024) + b'"}\n',
        "deep": b"[" * 100_000 + b"]" * 100_000,
        "truncated": text[: len(text) // 2].encode("utf-8"),
        "planted-key": json.dumps(planted).encode("utf-8"),
    }


@pytest.mark.parametrize("kind", sorted(_hostile_plans()))
def test_a_hostile_plan_file_is_a_located_error_and_nothing_is_written(kind: str, route: FakeProvider,
                                                                       tmp_path: Path) -> None:
    plan = tmp_path / "gpt-4o.json"
    plan.write_bytes(_hostile_plans()[kind])
    out = tmp_path / "out"
    result = invoke_checked("probe", plan, "--api-base", route.base, "--out", out, expect=2)
    assert str(plan) in result.output and "error[" in result.output, result.output
    assert not out.exists() or not any(out.iterdir())
    assert route.posts() == []
