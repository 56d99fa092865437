"""The snippet ``capplan probe --out`` writes compiles with the whole catalogue and changes the probed plan only.

A probe of the emulated OpenAI Responses route (the conformance emulator answers with OpenAI's real
refusal of ``temperature 0`` for gpt-5) writes a ``probe_evidence:`` entry for that route. Compiled
with every model of the bundled catalogue, it gives gpt-5 a ``reject`` rule citing the measurement,
and every other plan stays byte for byte what it was, the same provider's other plans included (a
``providers:`` block would have reached all of them).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ruamel.yaml import YAML

from capplan.compiler.compile import compile_paths
from capplan.conformance.corpus import Corpus, load_corpus
from capplan.conformance.emulators import checks_by_protocol
from capplan.conformance.emulators.openai_responses import ResponsesEmulator
from capplan.probes.evidence import ProbeRecord, QuestionResult, RouteIdentity
from capplan.probes.snippet import snippet_text
from tests.cli_runner import invoke_checked
from tests.probes.test_probe_emulated import probe_json, question
from tests.responses_plan import GPT5

KEY = "sk-probe-test-0123456789"


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return load_corpus(checks=checks_by_protocol())


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    for name in ("LLM_PROXY_BASE_URL", "LLM_PROXY_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(name, raising=False)


def test_the_snippet_compiles_with_the_whole_catalogue_and_changes_only_the_probed_plan(
        corpus: Corpus, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with ResponsesEmulator(corpus.rules, route="openai") as emu:
        endpoint = emu.base_url + "/v1/responses"
        invoke_checked("probe", GPT5, "--api-base", emu.base_url + "/v1", "--out", out, expect=0)
    snippet = out / "gpt-5.overlay.yaml"
    record = probe_json(out)
    # the snippet is one probe_evidence entry: the route's identity and every answer about one value
    [written] = YAML(typ="safe").load(snippet.read_text(encoding="utf-8"))["probe_evidence"]
    assert {k: written[k] for k in ("provider", "protocol", "model", "gateway_route", "endpoint", "transport",
                                    "date", "plan")} == {
        "provider": "openai", "protocol": "openai-responses", "model": "gpt-5", "gateway_route": None,
        "endpoint": endpoint, "transport": "direct", "date": record["date"], "plan": "gpt-5"}
    temperature = question(record, "temperature=0")
    assert written["values"]["temperature"][0.0] == {
        "outcome": "refused", "status": 400, "error": temperature["detail"], "fingerprint": temperature["fingerprint"]}
    assert written["values"]["tool_choice"]["required"]["outcome"] == "accepted"

    before = compile_paths().plans
    after = compile_paths(overlays=[snippet])
    changed = sorted(k for k in before if after.plans[k].fingerprint != before[k].fingerprint)
    assert changed == ["gpt-5"]
    # the same provider's other plans stayed as they were: another model name is another route
    assert len(before) > 20 and [k for k, p in before.items() if p.binding.key == "openai" and k != "gpt-5"]
    rule = after.plans["gpt-5"].param_value_rules["temperature"]["0.0"]
    assert rule.action == "reject" and str(temperature["detail"]) in rule.evidence
    assert after.plans["gpt-5"].provenance["param_value_rules.temperature.0.0"].layer == f"probe-evidence:{record['date']}"
    assert not [w for w in after.warnings if w.code.startswith("probe-evidence")]


def test_a_snippet_with_nothing_about_one_value_is_an_empty_block_that_compiles() -> None:
    route = RouteIdentity("openai-chat", "https://api.openai.com/v1/chat/completions", "gpt-4o", "direct")
    from capplan.probes.evidence import Claim, Outcome

    refused_baseline = QuestionResult("max_tokens=16", "max_tokens", None, "ab" * 32,
                                      Outcome("refused", 400, "Invalid URL"), Claim("accepted", "sent"))
    text = snippet_text(ProbeRecord("gpt-4o", "f" * 64, "2026-11-02", "0.1.0", route, (refused_baseline,)), "openai")
    assert "probe_evidence: []" in text and "own request was not accepted" in text
    assert YAML(typ="safe").load(text) == {"probe_evidence": []}
