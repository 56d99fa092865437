"""``capplan probe`` against the conformance emulators: the providers' real refusals, on loopback.

The bundled gpt-5 plan on the emulated OpenAI Responses route finds ``temperature 0`` refused
with OpenAI's exact text, on both transports; the snippet it writes compiles into a plan whose
rule ``capplan explain`` cites; a provider that changes its mind between two probes is drift.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from capplan.compiler.compile import compile_paths
from capplan.conformance.corpus import Corpus, load_corpus
from capplan.conformance.emulators import checks_by_protocol
from capplan.conformance.emulators.openai_chat import OpenAIChatEmulator
from capplan.conformance.emulators.openai_responses import ResponsesEmulator
from capplan.core.canonical import canonical_bytes, sha256_hex
from capplan.executor.client import Client
from capplan.executor.plan import Plan
from capplan.probes.runner import plan_probe
from tests.cli_runner import invoke_checked
from tests.responses_plan import GPT5, plan_on

KEY = "sk-probe-test-0123456789"
GPT4O = Path(__file__).resolve().parents[2] / "golden" / "plans" / "gpt-4o.json"


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return load_corpus(checks=checks_by_protocol())


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    for name in ("LLM_PROXY_BASE_URL", "LLM_PROXY_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(name, raising=False)


#: the corpus rule OpenAI's strict-schema keyword refusals come from, on the Responses API
KEYWORD_RULE = "responses.strict_keyword_not_permitted"


@contextmanager
def responses_route(corpus: Corpus, *, without: str | tuple[str, ...] = ()) -> Iterator[ResponsesEmulator]:
    left_out = (without,) if isinstance(without, str) else without
    rules = [rule for rule in corpus.rules if rule.id not in left_out]
    with ResponsesEmulator(rules, route="openai") as emu:
        yield emu


def temperature_rule(corpus: Corpus) -> str:
    """The corpus rule OpenAI's temperature refusal for gpt-5 comes from."""
    return next(rule.id for rule in corpus.rules
                if rule.protocol == "openai-responses" and rule.check == "temperature_not_default")


def probe_json(folder: Path, key: str = "gpt-5") -> dict[str, object]:
    data: dict[str, object] = json.loads((folder / f"{key}.probe.json").read_text(encoding="utf-8"))
    return data


def question(record: dict[str, object], qid: str) -> dict[str, object]:
    questions = record["questions"]
    assert isinstance(questions, list)
    return next(q for q in questions if q["id"] == qid)


def test_gpt5_temperature_zero_is_refused_with_openais_text_and_becomes_a_rule(corpus: Corpus, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with responses_route(corpus) as emu:
        endpoint = emu.base_url + "/v1/responses"
        result = invoke_checked("probe", GPT5, "--api-base", emu.base_url + "/v1", "--out", out, expect=0)
        refused = [x for x in emu.exchanges if x.status == 400]
    # the emulator answered one refusal, temperature's (the strict tool keywords OpenAI refuses never
    # leave: the plan's strict sanitiser refuses them first), and the probe kept its text verbatim
    by_rule = [x for x in refused if x.violations[0].rule_id == temperature_rule(corpus)]
    assert len(by_rule) == 1
    assert {x.violations[0].rule_id for x in refused} == {temperature_rule(corpus)}
    openai_text = by_rule[0].violations[0].message
    record = probe_json(out)
    temperature = question(record, "temperature=0")
    assert (temperature["outcome"], temperature["status"], temperature["detail"]) == ("refused", 400, openai_text)
    assert by_rule[0].body["temperature"] == 0.0
    # the fingerprint is the sha256 of the body the route received
    assert temperature["fingerprint"] == sha256_hex(canonical_bytes(by_rule[0].body))
    assert record["route"] == {"protocol": "openai-responses", "endpoint": endpoint,
                               "model": "gpt-5", "transport": "direct", "gateway_route": None}
    assert question(record, "tool_choice=required")["outcome"] == "accepted"
    assert question(record, "stop=END")["outcome"] == "skipped"  # the Responses API has no stop sequences
    assert "Responses API has no stop" in str(question(record, "stop=END")["detail"])
    assert "temperature=0: refused, HTTP 400" in result.output
    # compiling with the snippet changes the plan, and only by the measured rule
    snippet = out / "gpt-5.overlay.yaml"
    compiled = compile_paths(data_dir=None, run_config=None, overlays=[snippet], model="gpt-5").plans["gpt-5"]
    rule = compiled.param_value_rules["temperature"]["0.0"]
    assert rule.action == "reject"
    for part in (str(record["date"]), str(record["capplan_version"]), endpoint,
                 str(temperature["fingerprint"]), "HTTP 400", json.dumps(openai_text)):
        assert part in rule.evidence
    assert compiled.fingerprint != Plan.load(GPT5).fingerprint
    explained = invoke_checked("explain", "gpt-5", "param_value_rules", "--presets-file", snippet, expect=0)
    assert "param_value_rules.temperature.0.0.action" in explained.output
    assert "gpt-5.overlay.yaml" in explained.output and openai_text.split(":")[0] in explained.output


def test_on_the_litellm_transport_the_same_questions_reach_the_route_but_litellm_keeps_temperature_back(
        corpus: Corpus, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with responses_route(corpus) as emu:
        invoke_checked("probe", plan_on("litellm", tmp_path), "--api-base", emu.base_url + "/v1", "--out", out, expect=0)
        received = [x.body for x in emu.exchanges]
    record = probe_json(out)
    assert record["route"]["transport"] == "litellm"  # type: ignore[index]
    # litellm's own map refuses temperature 0 for gpt-5 before sending: not the route's answer, so no claim
    temperature = question(record, "temperature=0")
    assert temperature["outcome"] == "not measured"
    assert "litellm refused it before sending" in str(temperature["detail"])
    assert all("temperature" not in body for body in received)
    snippet = (out / "gpt-5.overlay.yaml").read_text(encoding="utf-8")
    assert "outcome: refused" not in snippet and "temperature" not in snippet  # no claim about what was not asked
    # every other question went out, once each, and was answered by the route: all but the two litellm
    # keeps back (temperature 0 and reasoning_effort xhigh)
    sent = [q for q in record["questions"] if q["outcome"] in ("accepted", "refused")]  # type: ignore[union-attr]
    client = Client(Plan.load(plan_on("litellm", tmp_path)), env={"OPENAI_API_KEY": KEY}, api_base="http://127.0.0.1:9/v1")
    assert len(sent) == len(received) == len(plan_probe(client).to_send) - 2


def test_check_is_quiet_when_the_route_agrees_and_names_a_provider_that_changed_its_mind(
        corpus: Corpus, tmp_path: Path) -> None:
    out = tmp_path / "first"
    # (the strict tool-schema keywords the route refuses are drift of their own: the test after this one)
    with responses_route(corpus, without=KEYWORD_RULE) as emu:
        agreed = invoke_checked("probe", "--check", GPT5, "--api-base", emu.base_url + "/v1", expect=0)
        invoke_checked("probe", GPT5, "--api-base", emu.base_url + "/v1", "--out", out, expect=0)
    # the bundled plan leaves temperature out (its params policy): refused today, as it claims
    assert "no drift" in agreed.output
    assert "not compared: gpt-5: stop END: skipped" in agreed.output
    # a plan carrying the measured rule, then the provider starts taking temperature 0
    compiled = compile_paths(data_dir=None, run_config=None, overlays=[out / "gpt-5.overlay.yaml"], model="gpt-5")
    ruled = tmp_path / "gpt-5.json"
    ruled.write_bytes(compiled.plans["gpt-5"].to_bytes())
    with responses_route(corpus, without=(temperature_rule(corpus), KEYWORD_RULE)) as changed:
        drifted = invoke_checked("probe", "--check", ruled, "--api-base", changed.base_url + "/v1", expect=1)
    line = next(x for x in drifted.output.splitlines() if x.startswith("gpt-5: temperature 0:"))
    assert "plan says refused (rule reject, evidence: " in line and line.endswith("route accepts it today")
    assert "drift found" in drifted.output


def test_a_chat_route_is_asked_stop_and_every_response_format(corpus: Corpus, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with OpenAIChatEmulator(corpus.rules, route="openai") as emu:
        invoke_checked("probe", GPT4O, "--api-base", emu.base_url + "/v1", "--out", out, expect=0)
        bodies = [x.body for x in emu.exchanges]
    record = probe_json(out, "gpt-4o")
    for qid in ("stop=END", "response_format=text", "response_format=json_object", "response_format=json_schema_strict"):
        assert question(record, qid)["outcome"] == "accepted", qid
    assert {"type": "json_schema", "json_schema": {
        "name": "answer", "strict": True, "schema": {
            "type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"],
            "additionalProperties": False}}} in [b.get("response_format") for b in bodies]
    assert ["END"] in [b.get("stop") for b in bodies]
    # every request is the plan's own with one setting changed: the same model, messages and output cap
    assert {b["model"] for b in bodies} == {"gpt-4o"}
    assert all(b["messages"] == bodies[0]["messages"] for b in bodies)
