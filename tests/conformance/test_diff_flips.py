"""``capplan diff`` lists the conformance cells a change flips, a flip to rejected first and loudly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from capplan.conformance.emulators import emulators
from tests.cli_runner import invoke

PLANS = Path(__file__).resolve().parents[2] / "golden" / "plans"
#: gpt-5 goes through the Responses API, whose refusal of a temperature it does not take this is
FLIP = "NOW REJECTED: gpt-5 x responses.temperature_unsupported: accepted -> rejected: Unsupported parameter: " \
       "'temperature' is not supported with this model. (scenario temperature_zero, request 0)"


@pytest.fixture(scope="module")
def sampling_gpt5(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """gpt-5 compiled with sampling forced on, so temperature 0 reaches the wire."""
    if "openai-responses" not in emulators():
        pytest.skip("no openai-responses emulator in this tree yet")
    work = tmp_path_factory.mktemp("flip")
    (work / "overlay.yaml").write_text("providers:\n  openai:\n    params:\n      supports_sampling_params: true\n",
                                       encoding="utf-8")
    result = invoke("compile", "--presets-file", str(work / "overlay.yaml"), "--model", "gpt-5", "--out", str(work / "plans"))
    assert result.exit_code == 0, result.output
    return work / "plans" / "gpt-5.json"


def test_a_change_that_flips_a_cell_to_rejected_says_so(sampling_gpt5: Path) -> None:
    result = invoke("diff", str(PLANS / "gpt-5.json"), str(sampling_gpt5))
    assert result.exit_code == 1  # the diff's own code: the plans differ
    assert "Conformance: 1 cell(s) flip, 1 to REJECTED (the provider would refuse these plans' requests):" in result.stdout
    assert f"  {FLIP}" in result.stdout


def test_the_flip_back_is_listed_too_and_json_carries_the_flips(sampling_gpt5: Path) -> None:
    back = invoke("diff", str(sampling_gpt5), str(PLANS / "gpt-5.json"), "--format", "json")
    assert back.exit_code == 1
    (flip,) = json.loads(back.stdout)["conformance_flips"]
    assert (flip["plan"], flip["rule_id"], flip["old"], flip["new"]) == ("gpt-5", "responses.temperature_unsupported",
                                                                         "rejected", "accepted")
    assert flip["detail"].startswith("Unsupported parameter: 'temperature' is not supported with this model.")
    github = invoke("diff", str(PLANS / "gpt-5.json"), str(sampling_gpt5), "--format", "github")
    assert "::error title=capplan conformance flip responses.temperature_unsupported::NOW REJECTED: gpt-5" in github.stdout


def test_no_conformance_and_unchanged_plans_run_nothing(sampling_gpt5: Path) -> None:
    skipped = invoke("diff", str(PLANS / "gpt-5.json"), str(sampling_gpt5), "--no-conformance")
    assert skipped.exit_code == 1 and "Conformance" not in skipped.stdout
    same = invoke("diff", str(PLANS / "gpt-5.json"), str(PLANS / "gpt-5.json"))
    assert same.exit_code == 0 and "Conformance" not in same.stdout
