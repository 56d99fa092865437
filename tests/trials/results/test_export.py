"""``capplan trial export``: inspect_ai eval logs and JSON Lines from real run folders.

The runs are the shared hostile runs (real trials through litellm against a loopback
provider). The inspect logs are read back by inspect_ai's own ``read_eval_log`` where
inspect_ai is installed (a test-time install, never a capplan dependency); the zip's members and
the JSONL rows are checked without it.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest

from capplan.core.redaction import register_secrets
from capplan.trials.report.formats import _csv_value
from tests.cli_runner import invoke
from tests.trials.results.hostile_runs import HOSTILE, TASKS, HostileRuns, with_second_trials


def _export(*args: str | Path) -> tuple[int, str]:
    result = invoke("trial", "export", *args)
    assert "Traceback" not in result.output
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def logs(hostile_runs: HostileRuns, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("export") / "logs"
    code, text = _export(*hostile_runs.paths, "--format", "inspect", "--out", out)
    assert code == 0, text
    assert "24 trial(s) exported" in text and "inspect view --log-dir" in text
    return out


def _members(path: Path) -> dict[str, Any]:
    with zipfile.ZipFile(path) as archive:
        return {name: json.loads(archive.read(name)) for name in archive.namelist()}


def _lines(run: Path) -> dict[str, dict[str, Any]]:
    return {line["key"]: line for line in map(json.loads, (run / "runs.jsonl").read_text().splitlines())}


def test_one_eval_log_per_plan_with_a_sample_per_trial(logs: Path, hostile_runs: HostileRuns) -> None:
    files = sorted(p.name for p in logs.iterdir())
    assert files == ["agent-a-b-2J-run_agent-a.eval", "agent-b-b-2J-run_agent-b.eval"]  # a folder name made safe
    members = _members(logs / files[0])
    assert list(members)[:1] == ["_journal/start.json"] and list(members)[-2:] == ["summaries.json", "header.json"]
    assert sorted(n for n in members if n.startswith("samples/")) == sorted(f"samples/{t}_epoch_1.json" for t in TASKS)
    header = members["header.json"]
    assert (header["version"], header["status"], header["eval"]["model"]) == (2, "success", "agent-a")
    assert header["eval"]["metadata"]["capplan"]["plan_fingerprint"] == hostile_runs.a.trials[0].plan_fingerprint
    [verdict] = [s for s in header["results"]["scores"] if s["name"] == "capplan"]
    assert verdict["metrics"]["accuracy"]["value"] == 11 / 12 and verdict["scored_samples"] == 12
    lines = _lines(hostile_runs.a.out)
    usage = header["stats"]["model_usage"]["agent-a"]
    assert usage["total_tokens"] == sum(line["total_tokens"] for line in lines.values())
    # these plans have no price: their cost is unknown, so no cost is written (never a made-up 0)
    assert {line["cost_usd"] for line in lines.values()} == {None} and "total_cost" not in usage

    sample = members["samples/t01_epoch_1.json"]
    assert [m["role"] for m in sample["messages"]] == ["system", "user", "assistant", "tool", "assistant", "user",
                                                       "assistant"]
    call = sample["messages"][2]["tool_calls"][0]
    assert (call["function"], call["arguments"]) == ("add", {"amount": 2, "memo": HOSTILE})  # text, as recorded
    tool = sample["messages"][3]
    assert tool["tool_call_id"] == call["id"] and tool["function"] == "add" and tool["content"].endswith("END-OF-OUTPUT")
    assert sample["scores"]["capplan"]["value"] == "C" and sample["scores"]["grader/expected_state"]["value"] == "C"
    assert members["samples/t00_epoch_1.json"]["scores"]["capplan"]["value"] == "I"
    line = lines["agent-a/t01/0"]
    assert sample["model_usage"]["agent-a"]["total_tokens"] == line["total_tokens"]
    assert (sample["metadata"]["dir"], sample["metadata"]["outcome"]) == (line["dir"], "passed")  # the JSONL row
    assert len(members["summaries.json"]) == 12 and members["summaries.json"][0]["completed"] is True


def test_the_logs_read_back_with_inspect_ais_own_reader(logs: Path, hostile_runs: HostileRuns) -> None:
    log_module = pytest.importorskip(
        "inspect_ai.log", reason="inspect_ai is not installed (a test-time install that .ci/run makes: 35 MB and 11 more "
        "packages; see docs/trials.md, 'capplan trial export', for the pip line)")
    for path, model, passed in ((logs / "agent-a-b-2J-run_agent-a.eval", "agent-a", 11),
                                (logs / "agent-b-b-2J-run_agent-b.eval", "agent-b", 1)):
        log = log_module.read_eval_log(str(path))
        assert log.status == "success" and log.eval.model == model and log.eval.task.startswith(model)
        assert log.samples is not None and len(log.samples) == 12
        assert sum(s.scores["capplan"].value == "C" for s in log.samples) == passed
        sample = next(s for s in log.samples if s.id == "t01")
        roles = [m.role for m in sample.messages]
        assert roles == ["system", "user", "assistant", "tool", "assistant", "user", "assistant"]
        assert sample.messages[2].tool_calls[0].function == "add"
        assert sample.messages[2].tool_calls[0].arguments == {"amount": 2 if model == "agent-a" else 1, "memo": HOSTILE}
        assert sample.model_usage[model].total_tokens > 0 and sample.model_usage[model].total_cost is None  # unknown
        assert log.stats.model_usage[model].total_tokens == sum(s.model_usage[model].total_tokens for s in log.samples)
        summaries = log_module.read_eval_log_sample_summaries(str(path))
        assert len(summaries) == 12


def test_jsonl_has_the_csv_fields_with_their_json_types(hostile_runs: HostileRuns, tmp_path: Path) -> None:
    code, text = _export(*hostile_runs.paths, "--format", "jsonl")
    assert code == 0, text
    rows = [json.loads(line) for line in text.splitlines()]
    report = invoke("trial", "report", *hostile_runs.paths, "--format", "csv")
    assert report.exit_code == 0
    table = list(csv.DictReader(io.StringIO(report.output)))
    assert len(rows) == len(table) == 2 * len(TASKS)
    assert list(rows[0]) == list(table[0])  # the CSV's columns, in its order
    for row, cells in zip(rows, table, strict=True):
        # the same values: the CSV's cells are the JSONL's, written as the CSV writes a cell (escapes removed)
        assert {k: str(_csv_value(v)) for k, v in row.items()} == cells
        assert isinstance(row["index"], int) and isinstance(row["passed"], bool)
    code, text = _export(hostile_runs.a.out, "--format", "jsonl", "--out", tmp_path / "x")
    assert code == 0 and (tmp_path / "x" / "trials.jsonl").read_text().count("\n") == len(TASKS)


def _tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_refusals_are_located_exit_2_and_write_nothing(hostile_runs: HostileRuns, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(hostile_runs.a.out, run)
    before = _tree(run)
    out = tmp_path / "out"
    # --out inside the run folder
    code, text = _export(run, "--format", "inspect", "--out", run / "logs")
    assert code == 2 and "is inside the run folder" in text and _tree(run) == before
    # --out that is a file
    (tmp_path / "file").write_text("x")
    code, text = _export(run, "--format", "inspect", "--out", tmp_path / "file")
    assert code == 2 and "--out" in text and "is a file" in text
    # no --out for inspect
    code, text = _export(run, "--format", "inspect")
    assert code == 2 and "needs --out" in text
    # a missing folder, and a folder that is not a run
    code, text = _export(tmp_path / "missing", "--format", "jsonl", "--out", out)
    assert code == 2 and "does not exist" in text and not out.exists()
    other = tmp_path / "notes"
    other.mkdir()
    (other / "todo.txt").write_text("x")
    code, text = _export(other, "--format", "inspect", "--out", out)
    assert code == 2 and "error[" in text and str(other) in text and not out.exists()
    # a trial file that does not read back: located, and nothing written (not even the other plans' logs)
    trajectory = run / "trials" / "agent-a" / "t05" / "0" / "trajectory.yaml"
    trajectory.write_text("messages: [\n  - {role: user\n")
    code, text = _export(run, hostile_runs.b.out, "--format", "inspect", "--out", out)
    assert code == 2 and f"{trajectory}:" in text and "is not valid YAML" in text and not out.exists()
    # a link planted where a log goes is refused before any file is written
    out.mkdir()
    (out / "agent-b-b-2J-run_agent-b.eval").symlink_to(tmp_path / "elsewhere")
    code, text = _export(hostile_runs.b.out, hostile_runs.a.out, "--format", "inspect", "--out", out)
    assert code == 2 and "is a link" in text and _tree(out) == ["agent-b-b-2J-run_agent-b.eval"]
    assert not (tmp_path / "elsewhere").exists()


def test_an_aborted_trial_carries_its_end_and_every_text_is_redacted_by_value(hostile_runs: HostileRuns,
                                                                             tmp_path: Path) -> None:
    canary = "sk-export-canary-5d1c0b7e9a"
    # a second trial of every task; task t03's ended aborted (a rate limit)
    run = with_second_trials(hostile_runs.a.out, tmp_path / "run", aborted="t03")
    trajectory = run / "trials" / "agent-a" / "t04" / "0" / "trajectory.yaml"
    trajectory.write_text(trajectory.read_text().replace("content: thanks", f"content: thanks {canary}"))
    register_secrets([canary])
    code, text = _export(run, "--format", "inspect", "--out", tmp_path / "logs")
    assert code == 0, text
    [log] = (tmp_path / "logs").iterdir()
    members = _members(log)
    aborted = members["samples/t03_epoch_2.json"]
    assert aborted["error"]["message"].startswith("aborted: rate_limit") and "capplan" not in aborted["scores"]
    assert members["samples/t03_epoch_1.json"].get("error") is None
    header = members["header.json"]
    [verdict] = [s for s in header["results"]["scores"] if s["name"] == "capplan"]
    assert (verdict["scored_samples"], verdict["unscored_samples"]) == (23, 1)  # the aborted one is not graded
    sample = members["samples/t04_epoch_1.json"]
    assert any("<redacted>" in str(m["content"]) for m in sample["messages"] if m["role"] == "user")
    with zipfile.ZipFile(log) as archive:
        assert all(canary.encode() not in archive.read(name) for name in archive.namelist())


def test_a_conversation_maps_onto_inspect_messages_and_hostile_arguments_stay_text() -> None:
    from capplan.trials.report.export.inspect_log import MAX_ARGUMENT_DEPTH, messages

    deep = "{\"a\": " * (MAX_ARGUMENT_DEPTH + 1) + "1" + "}" * (MAX_ARGUMENT_DEPTH + 1)
    trajectory = {
        "system_prompt": "be brief",
        "tool_calls": [{"id": "c2", "error": "exception"}],
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None,
             "reasoning": {"blocks": [{"type": "thinking", "text": "plan", "signature": "sig"},
                                      {"type": "redacted", "encrypted_data": "xx"}], "summary": "short"},
             "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"x": [1]}'}},
                            {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{not json"}},
                            {"id": "c3", "type": "function", "function": {"name": "h", "arguments": "[" * 50_000}},
                            {"id": "c4", "type": "function", "function": {"name": "k", "arguments": deep}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
            {"role": "tool", "tool_call_id": "c2", "content": "boom"},
            {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
        ],
    }
    chat = messages(trajectory, "m", "s-1")
    assert [m["role"] for m in chat] == ["system", "user", "assistant", "tool", "tool", "assistant"]
    assert [m["id"] for m in chat] == [f"s-1-m{i}" for i in range(6)]
    assistant = chat[2]
    assert assistant["content"] == [
        {"type": "reasoning", "reasoning": "plan", "redacted": False, "signature": "sig", "summary": "short"},
        {"type": "reasoning", "reasoning": "", "redacted": True}, {"type": "text", "text": ""}]
    calls = {c["id"]: c for c in assistant["tool_calls"]}
    assert calls["c1"]["arguments"] == {"x": [1]} and "parse_error" not in calls["c1"]
    for bad, why in (("c2", "not JSON"), ("c3", "RecursionError"), ("c4", "nested deeper than")):
        assert calls[bad]["arguments"] == {} and why in calls[bad]["parse_error"], calls[bad]
    assert chat[3] == {"content": "ok", "role": "tool", "tool_call_id": "c1", "function": "f", "id": "s-1-m3"}
    assert chat[4]["error"] == {"type": "unknown", "message": "exception: boom"} and chat[4]["function"] == "g"
    assert chat[5]["content"] == "done"
