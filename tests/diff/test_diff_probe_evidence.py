"""``capplan diff`` shows an evidence change as a behaviour change, with the measurement as its layer.

Three probes of the emulated gpt-5 Responses route, in process: the first two, on two days, find
``temperature 0`` refused with OpenAI's text (the same action on new evidence), the third finds it
accepted (the provider changed its mind). Each snippet is compiled into a gpt-5 plan, and the plans
are diffed as a reviewer would.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from capplan.compiler.compile import compile_paths
from capplan.compiler.diff.checkers import CHECKERS
from capplan.compiler.diff.engine import diff_plan_sets
from capplan.compiler.diff.plan_files import load_side
from capplan.conformance.corpus import Corpus, load_corpus
from capplan.conformance.emulators import checks_by_protocol
from capplan.conformance.emulators.openai_responses import ResponsesEmulator
from capplan.executor.client import Client
from capplan.executor.plan import Plan
from capplan.probes.runner import plan_probe, run_probe
from capplan.probes.snippet import snippet_text
from tests.diff.conftest import invoke
from tests.responses_plan import GPT5

KEY = "sk-probe-test-0123456789"


@pytest.fixture(scope="module")
def plans(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """gpt-5 compiled with the snippet of each probe: refused on two days, then accepted."""
    corpus: Corpus = load_corpus(checks=checks_by_protocol())
    refusal = next(rule.id for rule in corpus.rules
                   if rule.protocol == "openai-responses" and rule.check == "temperature_not_default")
    folder = tmp_path_factory.mktemp("probe-diff")
    out: dict[str, Path] = {}
    for name, date, rules in (("nov", "2026-11-02", corpus.rules), ("dec", "2026-12-01", corpus.rules),
                              ("changed", "2026-12-01", [r for r in corpus.rules if r.id != refusal])):
        with ResponsesEmulator(rules, route="openai") as emu:
            client = Client(Plan.load(GPT5), api_base=emu.base_url + "/v1", env={"OPENAI_API_KEY": KEY})
            record = run_probe(client, plan_probe(client), date=date)
        snippet = folder / f"{name}.overlay.yaml"
        snippet.write_text(snippet_text(record, "openai"), encoding="utf-8")
        plan = compile_paths(overlays=[snippet], model="gpt-5").plans["gpt-5"]
        (folder / name).mkdir()
        out[name] = folder / name / "gpt-5.json"
        out[name].write_bytes(plan.to_bytes())
    return out


def test_new_evidence_behind_the_same_action_is_a_change_of_the_value_rule_not_cosmetic(plans: dict[str, Path]) -> None:
    (_, old), (_, new) = load_side(plans["nov"]), load_side(plans["dec"])
    report = diff_plan_sets(old, new, list(CHECKERS.values()), old_label="nov", new_label="dec")
    [model] = report.models
    assert model.status == "changed" and report.differs
    [change] = model.changes
    assert (change.check, change.field, change.kind) == ("value_rules", "param_value_rules.temperature.0.0.evidence",
                                                         "modified")
    assert change.old.startswith("2026-11-02, capplan") and change.new.startswith("2026-12-01, capplan")
    assert change.source is not None and change.source.layer == "probe-evidence:2026-12-01"
    # the command says so, and exits 1 (plans differ) as for any behaviour change
    result = invoke("diff", str(plans["nov"]), str(plans["dec"]), "--no-conformance")
    assert result.code == 1
    line = next(x for x in result.stdout.splitlines() if "param_value_rules.temperature.0.0.evidence" in x)
    assert line.lstrip().startswith("value_rules") and "[probe-evidence:2026-12-01" in line
    assert "1 changed" in result.stdout
    data = json.loads(invoke("diff", str(plans["nov"]), str(plans["dec"]), "--no-conformance",
                             "--format", "json").stdout)
    assert [m["status"] for m in data["models"]] == ["changed"]


def test_a_provider_that_changed_its_mind_removes_the_rule_and_names_the_measurement_behind_it(
        plans: dict[str, Path]) -> None:
    result = invoke("diff", str(plans["dec"]), str(plans["changed"]), "--no-conformance")
    assert result.code == 1
    line = next(x for x in result.stdout.splitlines() if "param_value_rules.temperature" in x)
    assert "value_rules" in line and "→ (absent)" in line and "probe-evidence:2026-12-01" in line
    # the plan compiled from the newer probe is the bundled plan again: the route takes temperature 0 and
    # gpt-5's params policy still leaves it out (the drift `capplan probe --check` reports)
    assert Plan.load(plans["changed"]).fingerprint == Plan.load(GPT5).fingerprint


def test_the_value_rules_check_says_evidence_counts() -> None:
    assert "evidence" in CHECKERS["value_rules"].description
    assert "same action" in CHECKERS["value_rules"].description
