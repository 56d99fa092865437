"""The probe's question families beyond one parameter's value: the output cap under the name the
plan does not send, the tool-schema features its sanitiser keeps, and the usage-field census.

Against the conformance emulators (OpenAI's real texts: a strict tool with ``allOf`` or
``default`` refused, which capplan's strict sanitiser now refuses before sending; ``max_tokens``
refused on a reasoning model) and against a scripted hostile
route (a usage object of ten thousand fields, a usage that is a list, a 500 on one feature, no
usage at all).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from capplan.conformance.corpus import Corpus, load_corpus
from capplan.conformance.emulator import Emulator
from capplan.conformance.emulators import checks_by_protocol
from capplan.conformance.emulators.openai_chat import OpenAIChatEmulator
from capplan.conformance.emulators.openai_responses import ResponsesEmulator
from capplan.executor.client import Client
from capplan.executor.plan import Plan
from capplan.probes.drift import drift
from capplan.probes.evidence import RECORD_VERSION
from capplan.probes.runner import plan_probe, run_probe
from capplan.probes.schema_features import feature_ids
from capplan.probes.usage_census import MAX_FIELDS, census
from tests.cli_runner import invoke_checked
from tests.fake_provider import FakeProvider, Reply, chat_completion, error_body, json_reply
from tests.responses_plan import GPT5

KEY = "sk-probe-families-0123456789"
GPT4O = Path(__file__).resolve().parents[2] / "golden" / "plans" / "gpt-4o.json"
ENV = {"OPENAI_API_KEY": KEY}


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    for name in ("LLM_PROXY_BASE_URL", "LLM_PROXY_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return load_corpus(checks=checks_by_protocol())


def by_id(record: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {q["id"]: q for q in record["questions"]}


# --- the emulated gpt-5 Responses route: one probe, with --check and --out, shared ---------------

@pytest.fixture(scope="module")
def gpt5(corpus: Corpus, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("gpt5")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("OPENAI_API_KEY", KEY)
        with ResponsesEmulator(corpus.rules, route="openai") as emu:
            result = invoke_checked("probe", "--check", GPT5, "--api-base", emu.base_url + "/v1", "--out", out,
                                    expect=0)
            exchanges = list(emu.exchanges)
    record = json.loads((out / "gpt-5.probe.json").read_text(encoding="utf-8"))
    return {"output": result.output, "record": record, "exchanges": exchanges}


def test_a_strict_tool_with_a_keyword_openai_refuses_never_reaches_the_route(gpt5: dict[str, Any]) -> None:
    # the plan's strict sanitiser refuses allOf and default in a strict tool before sending (OpenAI
    # answers each with a 400): the question is not sent, and says why; outside strict mode both go out
    found = by_id(gpt5["record"])
    assert not [x for x in gpt5["exchanges"]
                if x.violations and x.violations[0].rule_id == "responses.strict_keyword_not_permitted"]
    for keyword in ("allOf", "default"):
        asked = found[f"tool_schema=strict+{keyword}"]
        assert (asked["outcome"], asked["fingerprint"]) == ("skipped", None)
        assert f"whose validators refuse {keyword!r}" in asked["detail"] and "/properties/value" in asked["detail"]
        assert found[f"tool_schema={keyword}"]["outcome"] == "accepted"
    assert gpt5["output"].splitlines()[-1] == "no drift"
    assert "usage:" not in gpt5["output"].split("not compared")[0]


def test_a_feature_the_sanitiser_rewrites_away_is_not_sent_and_says_why(gpt5: dict[str, Any]) -> None:
    found = by_id(gpt5["record"])
    assert [qid for qid in feature_ids() if qid in found] == feature_ids()
    for qid in ("tool_schema=ref_defs", "tool_schema=strict+ref_defs", "tool_schema=typed_map"):
        assert found[qid]["outcome"] == "skipped" and found[qid]["fingerprint"] is None
        assert "the plan's schema sanitiser (strict) rewrites" in found[qid]["detail"]
        assert found[qid]["claim"] == "none"
    sent_tools = [x.body["tools"][0] for x in gpt5["exchanges"] if isinstance(x.body, dict) and x.body.get("tools")]
    assert not any("$ref" in json.dumps(t) or "$defs" in json.dumps(t) for t in sent_tools)
    # every kept feature went out once, as the plan's builder made it (the Responses tool shape)
    strict_sent = [t for t in sent_tools if t["strict"] is True]
    assert len(strict_sent) == sum(1 for q in found.values() if q["id"].startswith("tool_schema=strict")
                                   and q["outcome"] != "skipped")
    assert all(t["parameters"]["additionalProperties"] is False for t in strict_sent)


def test_the_responses_route_has_one_cap_name_and_every_answer_is_counted_by_usage_field(gpt5: dict[str, Any]) -> None:
    record = gpt5["record"]
    assert record["record_version"] == RECORD_VERSION == 2
    cap = by_id(record)["output_cap_name=max_tokens"]
    assert cap["outcome"] == "skipped" and "only max_output_tokens" in cap["detail"]
    accepted = [q for q in record["questions"] if q["outcome"] == "accepted"]
    usage = record["usage"]
    assert usage["answers"] == len(accepted)
    # OpenAI's Responses names, not the chat names capplan's mapping adds beside them
    assert set(usage["fields"]) == {"input_tokens", "input_tokens_details.cached_tokens", "output_tokens",
                                    "output_tokens_details.reasoning_tokens", "total_tokens"}
    assert all(q["usage_fields"] == sorted(usage["fields"]) for q in accepted)
    reads = {tuple(r["names"]): r["answers_with"] for r in usage["plan_reads"]}
    assert reads == {("input_tokens",): len(accepted), ("output_tokens",): len(accepted),
                     ("input_tokens_details.cached_tokens",): len(accepted),
                     ("output_tokens_details.reasoning_tokens",): len(accepted)}
    assert all(q["usage_fields"] is None for q in record["questions"] if q["outcome"] != "accepted")


def test_the_dry_run_lists_the_new_questions_with_their_cost() -> None:
    dry = invoke_checked("probe", "--dry-run", GPT4O, "--api-base", "http://127.0.0.1:9/v1", expect=0)
    assert "  output_cap_name=max_completion_tokens: openai-chat model gpt-4o sha256:" in dry.output
    for qid in feature_ids():
        assert f"  {qid}: openai-chat model gpt-4o sha256:" in dry.output, qid


# --- a chat route that renames max_tokens (gpt-5 on chat completions) ---------------------------

def chat_gpt5() -> Plan:
    """The bundled gpt-5 plan as an openai-chat route: litellm's rename of max_tokens applies."""
    body = Plan.load(GPT5).body()
    body["wire"] = {**body["wire"], "protocol": "openai-chat", "path": "/chat/completions", "body": {},
                    "renames": {"max_tokens": "max_completion_tokens"}}
    body["policies"]["reasoning_codec"] = {"name": "none", "params": {}}
    return Plan.seal(body)


def test_a_plan_that_renames_the_cap_asks_the_old_name_and_records_openais_refusal_without_drift(
        corpus: Corpus) -> None:
    plan = chat_gpt5()
    with OpenAIChatEmulator(corpus.rules, route="openai") as emu:
        client = Client(plan, env=ENV, api_base=emu.base_url + "/v1")
        record = run_probe(client, plan_probe(client), date="2026-12-05")
        bodies = [x.body for x in emu.exchanges]
    result = {r.id: r for r in record.results}
    asked = result["output_cap_name=max_tokens"]
    assert (asked.outcome.kind, asked.outcome.status) == ("refused", 400)
    assert asked.outcome.detail == ("Unsupported parameter: 'max_tokens' is not supported with this model. "
                                    "Use 'max_completion_tokens' instead.")
    assert result["max_tokens=16"].outcome.kind == "accepted"
    # the old name reached the wire as it is (past the rename), and only in that one request
    with_old = [b for b in bodies if "max_tokens" in b]
    assert len(with_old) == 1 and with_old[0]["max_tokens"] == 16 and "max_completion_tokens" not in with_old[0]
    # the plan never sends the old name, so the refusal is recorded, never drift
    assert asked.claim.kind == "none" and "renames max_tokens" in asked.claim.why
    assert not [line for line in drift(record).drifted if "output_cap_name" in line]


# --- a scripted hostile route (gpt-4o, chat completions) ------------------------------------------

@pytest.fixture
def route() -> Iterator[FakeProvider]:
    with FakeProvider() as server:
        yield server


def ok(usage: Any = "default") -> Reply:
    return json_reply(chat_completion("OK", usage=usage))


def sent_ids(server: FakeProvider) -> list[str]:
    client = Client(Plan.load(GPT4O), api_base=server.base, env=ENV)
    return [p.question.id for p in plan_probe(client).to_send]


def test_a_hostile_usage_object_is_bounded_redacted_and_a_500_on_one_feature_is_not_measured(
        route: FakeProvider, tmp_path: Path) -> None:
    # a secret-bearing name first (it is read), then more fields than are ever read
    huge: dict[str, Any] = {f"leak_{KEY}": 1, "prompt_tokens_details": {f"nested_{i}": 1 for i in range(10_000)}}
    huge.update({f"field_{i}": i for i in range(10_000)})
    answers = {"temperature=0": ok(huge), "seed=1": ok([1, 2, 3]), "stop=END": ok("a string"),
               "tool_schema=anyOf": json_reply(error_body("upstream exploded"), 500)}
    ids = sent_ids(route)
    route.script(*[answers.get(qid) or ok() for qid in ids])
    invoke_checked("probe", GPT4O, "--api-base", route.base, "--out", tmp_path, expect=0)
    assert len(route.posts()) == len(ids)  # nothing retried
    text = (tmp_path / "gpt-4o.probe.json").read_text(encoding="utf-8")
    assert KEY not in text and len(text) < 200_000
    found = by_id(json.loads(text))
    hostile = found["temperature=0"]
    assert len(hostile["usage_fields"]) == MAX_FIELDS and "more fields left out" in hostile["usage_problem"]
    assert (found["seed=1"]["usage_fields"], found["seed=1"]["usage_problem"]) == ([], "the usage is a list, not an object")
    assert found["stop=END"]["usage_problem"] == "the usage is a string, not an object"
    assert (found["tool_schema=anyOf"]["outcome"], found["tool_schema=anyOf"]["status"]) == ("not measured", 500)
    assert found["tool_schema=anyOf"]["usage_fields"] is None
    assert found["tool_schema=enum"]["usage_fields"] == ["completion_tokens", "prompt_tokens", "total_tokens"]


def test_a_route_that_returns_no_usage_is_drift_naming_each_field_the_plan_reads(route: FakeProvider) -> None:
    route.script(*[ok(None) for _ in range(3)])
    result = invoke_checked("probe", "--check", GPT4O, "--api-base", route.base, "--max-requests", "3", expect=1)
    for names, why in (("prompt_tokens", "every call's cost and budget count it"),
                       ("prompt_tokens_details.cached_tokens or cache_read_input_tokens or "
                        "prompt_tokens_details.cache_read_tokens", "the plan prices cached input apart (pricing.cache_read)")):
        assert f"gpt-4o: usage: plan reads {names} ({why}), route returned none of it in 3 answers" in result.output
    assert "drift found" in result.output


def test_a_refused_baseline_says_whether_the_route_takes_the_cap_under_the_other_name(route: FakeProvider) -> None:
    ids = sent_ids(route)
    route.script(*[json_reply(error_body("max_tokens is not supported: use max_completion_tokens"), 400)
                   if qid == "max_tokens=16" else ok() for qid in ids])
    result = invoke_checked("probe", "--check", GPT4O, "--api-base", route.base, expect=1)
    line = next(x for x in result.output.splitlines() if x.startswith("gpt-4o: the plan's own request"))
    assert line.endswith("(the route accepts the output cap as max_completion_tokens)")


# --- the census read on its own, and the emulators' strict keyword rule --------------------------

def test_the_census_reads_names_only_treats_null_as_absent_and_leaves_out_what_the_responses_mapping_adds() -> None:
    class Details:
        def model_dump(self) -> dict[str, Any]:
            return {"cached_tokens": 0, "audio_tokens": None}

    class Usage:
        def model_dump(self) -> dict[str, Any]:
            return {"prompt_tokens": 3, "completion_tokens": None, "prompt_tokens_details": Details().model_dump()}

    seen = census({"usage": Usage()}, "openai-chat", str)
    assert seen.fields == ("prompt_tokens", "prompt_tokens_details.cached_tokens") and seen.problem is None
    responses = {"usage": {"input_tokens": 1, "output_tokens": 2, "prompt_tokens": 1, "completion_tokens": 2,
                           "prompt_tokens_details": {"cached_tokens": 0}, "total_tokens": None}}
    assert census(responses, "openai-responses", str).fields == ("input_tokens", "output_tokens")
    assert census({"choices": []}, "openai-chat", str).problem == "the answer has no usage object"
    assert census({"usage": 7}, "openai-chat", str).problem == "the usage is a number, not an object"


def post(emu: Emulator, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    request = urllib.request.Request(emu.base_url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())


def test_the_openai_emulators_refuse_a_strict_keyword_where_openai_does(corpus: Corpus) -> None:
    params = {"type": "object", "properties": {"when": {"type": "string", "default": "now"}}, "required": ["when"],
              "additionalProperties": False}
    chat_tool = {"type": "function", "function": {"name": "clock", "parameters": params, "strict": True}}
    with OpenAIChatEmulator(corpus.rules, route="openai") as emu:
        body = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}], "tools": [chat_tool]}
        status, answer = post(emu, "/v1/chat/completions", body)
        assert (status, answer) == (400, {"error": {
            "message": "Invalid schema for function 'clock': In context=('properties', 'when'), 'default' is not permitted.",
            "type": "invalid_request_error", "param": "tools[0].function.parameters", "code": "invalid_function_parameters"}})
        loose = {**chat_tool, "function": {**chat_tool["function"], "strict": False}}
        assert post(emu, "/v1/chat/completions", {**body, "tools": [loose]})[0] == 200
    with ResponsesEmulator(corpus.rules, route="openai") as emu:
        # a Responses function without `strict` is strict
        flat = {"type": "function", "name": "clock", "parameters": {**params, "allOf": [{"type": "object"}]}}
        body = {"model": "gpt-4.1", "input": "hi", "tools": [flat]}
        status, answer = post(emu, "/v1/responses", body)
        assert status == 400 and answer["error"]["param"] == "tools[0].parameters"
        assert answer["error"]["message"] == "Invalid schema for function 'clock': In context=(), 'allOf' is not permitted."
        assert post(emu, "/v1/responses", {**body, "tools": [{**flat, "strict": False}]})[0] == 200
