"""The comparison on the static ``trial view`` page: the server's comparison, from the page's own data, offline.

These tests read the embedded index in this process; ``test_view_browser`` opens the written page
in headless Chromium (reusing its page and browser) and reads what each section shows. The two hostile
runs (``hostile_runs``) flip on every task: A passes all but t00, B only t00, and each pair of
conversations parts at the agent's tool call (A adds 2, B adds 1).
"""

from __future__ import annotations

import copy
import importlib.util
from pathlib import Path
from typing import Any

import pytest

from capplan.trials.report.compare import compare
from capplan.trials.report.run_data import load_run, load_runs
from capplan.trials.report.view.payload import TRIAL_FIELDS, build_payload
from capplan.trials.report.why import comparison_json, side_by_side
from tests.cli_runner import invoke
from tests.trials.results.hostile_runs import TASKS, HostileRuns

REPO = Path(__file__).resolve().parents[3]
KEY = TRIAL_FIELDS.index("key")


@pytest.fixture(scope="module")
def index(hostile_runs: HostileRuns) -> dict[str, Any]:
    return build_payload(load_runs(hostile_runs.paths), generated_by="test").index


@pytest.fixture(scope="module")
def report_lines(hostile_runs: HostileRuns) -> list[str]:
    printed = invoke("trial", "report", *hostile_runs.paths)
    assert printed.exit_code == 0, printed.output
    return printed.output.splitlines()


def test_the_page_holds_the_servers_comparison_with_trial_report_s_verdict(
        hostile_runs: HostileRuns, index: dict[str, Any], report_lines: list[str]) -> None:
    data = copy.deepcopy(index["comparison"])
    [pair] = data["pairs"]
    assert f"- {pair['verdict']}" in report_lines  # the very line trial report prints
    assert pair["verdict"] == "agent-a better than agent-b: +83 pp, p = 0.006, 12 paired tasks"
    # the server's builder, unchanged but for what the page adds to each flip (its trials' numbers, the divergence)
    served = comparison_json(compare(load_runs(hostile_runs.paths)), {})
    for flip in pair["flips"]:
        del flip["a"]["no"], flip["b"]["no"], flip["diverges_at"]
    assert data == served


def test_every_flip_links_its_two_trials_and_parts_where_the_server_says(
        hostile_runs: HostileRuns, index: dict[str, Any]) -> None:
    [pair] = index["comparison"]["pairs"]
    assert [f["task"] for f in pair["flips"]] == TASKS
    assert [f["passed"] for f in pair["flips"]] == ["agent-b"] + ["agent-a"] * 11
    trials = {(t.run, t.key): t for run in load_runs(hostile_runs.paths) for t in run.trials}
    for flip in pair["flips"]:
        a, b = flip["a"], flip["b"]
        assert index["trials"][a["no"]][KEY] == a["key"] == f"agent-a/{flip['task']}/0"
        assert index["trials"][b["no"]][KEY] == b["key"] == f"agent-b/{flip['task']}/0"
        # from the page's detail blocks, as the server finds it from the trial files
        assert flip["diverges_at"] == side_by_side(trials[a["run"], a["key"]], trials[b["run"], b["key"]])["diverges_at"] == 1


def test_each_model_of_one_run_is_compared_with_the_first(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("trial_view_benchmark", REPO / "benchmarks" / "trial_view.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    run = load_run(bench.write_synthetic_run(tmp_path / "run", 36, models=3, trials_per_task=2))
    data = build_payload([run], generated_by="test").index
    comparison = data["comparison"]
    labels = [c["label"] for c in comparison["columns"]]
    assert len(labels) == 3 and [(p["a"], p["b"]) for p in comparison["pairs"]] == [(labels[0], labels[1]),
                                                                                        (labels[0], labels[2])]
    assert [p["verdict"] for p in comparison["pairs"]] == [p.verdict() for p in compare([run]).pairs]
    flips = [f for p in comparison["pairs"] for f in p["flips"]]
    assert flips  # these draws flip some tasks
    for flip in flips:
        assert data["trials"][flip["a"]["no"]][KEY] == flip["a"]["key"]
        assert data["trials"][flip["b"]["no"]][KEY] == flip["b"]["key"]
    # one model alone: nothing to compare, no section
    alone = load_run(bench.write_synthetic_run(tmp_path / "one", 10, models=1, trials_per_task=2))
    assert build_payload([alone], generated_by="test").index["comparison"] is None
