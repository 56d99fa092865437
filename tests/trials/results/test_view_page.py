"""The ``trial view`` page as a file: self-contained, data escaped, written only where it may be, trial files read defensively."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from capplan.trials.report.view.page import script_json
from tests.cli_runner import invoke
from tests.trials.results.hostile_runs import HOSTILE, TASKS, HostileRuns, with_second_trials


def view(*args: str | Path) -> tuple[int, str]:
    result = invoke("trial", "view", *args)
    return result.exit_code, result.output


def blocks(html: str) -> dict[str, object]:
    """Every JSON block of the page by element id, parsed as the browser parses it."""
    found = re.findall(r'<script type="application/json" id="([^"]+)">(.*?)</script>', html, flags=re.S)
    return {name: json.loads(text) for name, text in found}


def copy_run(hostile_runs: HostileRuns, tmp_path: Path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(hostile_runs.a.out, copy)
    return copy


def test_the_page_needs_nothing_else_and_no_text_escapes_its_element(hostile_runs: HostileRuns, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    code, output = view(*hostile_runs.paths, "--out", out)
    assert code == 0, output
    html = out.read_text(encoding="utf-8")
    # nothing fetched: no URL anywhere a browser would load one, and a policy refusing any
    assert not re.search(r'\b(?:src|href)\s*=\s*["\']?(?:https?:|//|javascript:)', html, flags=re.I)
    assert "default-src 'none'" in html and "<link" not in html
    # exactly the page's own script elements: the index, one detail per trial, the code
    assert html.count("<script") == html.count("</script>") == 1 + 2 * len(TASKS) + 1
    assert "<!--" not in html.split("<body>", 1)[1]
    data = blocks(html)
    assert len(data) == 1 + 2 * len(TASKS)
    details = [d for name, d in data.items() if name.startswith("d-")]
    outputs = [c["output"] for d in details for c in d["tool_calls"]]  # type: ignore[index]
    assert all(HOSTILE in o and o.endswith("END-OF-OUTPUT") for o in outputs)  # whole, escapes kept as data
    users = [m["content"] for d in details for m in d["messages"] if m["role"] == "user"]  # type: ignore[index]
    assert HOSTILE in users
    # the title is autoescaped, the folder names never raw
    assert "<b>|" not in html and "&lt;b&gt;|" in html.split("</title>")[0]


def test_script_json_cannot_close_its_element() -> None:
    text = str(script_json({"a": "</script><!-- & \u2028"}))
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"a": "</script><!-- & \u2028"}


def test_out_inside_a_run_folder_is_refused_and_nothing_is_written(hostile_runs: HostileRuns, tmp_path: Path) -> None:
    run = copy_run(hostile_runs, tmp_path)
    before = sorted(p.relative_to(run) for p in run.rglob("*"))
    code, output = view(run, "--out", run / "trials" / "view.html")
    assert code == 2 and "error[VIEW_OUT]" in output and "inside the run folder" in output and "hint:" in output
    assert sorted(p.relative_to(run) for p in run.rglob("*")) == before


def test_out_through_a_link_is_refused(hostile_runs: HostileRuns, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.html"
    target.write_text("keep")
    (tmp_path / "pages").mkdir()
    (tmp_path / "pages" / "report.html").symlink_to(target)
    code, output = view(hostile_runs.a.out, "--out", tmp_path / "pages" / "report.html")
    assert code == 2 and "error[VIEW_OUT]" in output
    assert target.read_text() == "keep"


def test_unknown_damaged_and_bomb_trial_files_do_not_stop_the_page(hostile_runs: HostileRuns, tmp_path: Path) -> None:
    run = copy_run(hostile_runs, tmp_path)
    trials = run / "trials" / "agent-a"
    # a field a later capplan adds is passed through to the page
    path = trials / "t01" / "0" / "trajectory.yaml"
    data = yaml.safe_load(path.read_text())
    data["future_field"] = {"per_call_journal": ["<script>x</script>"]}
    path.write_text(yaml.safe_dump(data))
    # a file that is not YAML, and one whose aliases expand past the bound
    (trials / "t02" / "0" / "metrics.yaml").write_text("calls: [unclosed\n")
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(7))
    (trials / "t03" / "0" / "trajectory.yaml").write_text(bomb)
    (trials / "t04" / "0" / "trajectory.yaml").unlink()
    out = tmp_path / "report.html"
    code, output = view(run, "--out", out)
    assert code == 0, output
    details = {d["key"]: d for d in _details_by_key(out.read_text(encoding="utf-8"))}
    assert details["agent-a/t01/0"]["trajectory_other"]["future_field"] == {"per_call_journal": ["<script>x</script>"]}
    [problem] = details["agent-a/t02/0"]["problems"]
    assert "t02/0/metrics.yaml:2:1: error[RUN_DATA]: is not valid YAML" in problem and "hint:" in problem
    [problem] = details["agent-a/t03/0"]["problems"]
    assert "expands to more than 2000000 values" in problem
    assert details["agent-a/t04/0"]["problems"] == ["trials/agent-a/t04/0/trajectory.yaml is missing"]
    assert details["agent-a/t05/0"]["problems"] == [] and details["agent-a/t05/0"]["messages"]


def _details_by_key(html: str) -> list[dict[str, object]]:
    data = blocks(html)
    index = data["view-index"]
    assert isinstance(index, dict)
    key_at = index["trial_fields"].index("key")
    out = []
    for i, trial in enumerate(index["trials"]):
        detail = data[f"d-{i}"]
        assert isinstance(detail, dict)
        out.append({**detail, "key": trial[key_at]})
    return out


def test_an_interrupted_trial_is_shown_as_such(hostile_runs: HostileRuns, tmp_path: Path) -> None:
    run = copy_run(hostile_runs, tmp_path)
    lines = (run / "runs.jsonl").read_text().splitlines()
    (run / "runs.jsonl").write_text("\n".join(line for line in lines if '"agent-a/t06/0"' not in line) + "\n")
    manifest = json.loads((run / "run.json").read_text())
    manifest["interrupted"] = ["agent-a/t06/0"]
    (run / "run.json").write_text(json.dumps(manifest))
    out = tmp_path / "report.html"
    code, output = view(run, "--out", out)
    assert code == 0, output
    html = out.read_text(encoding="utf-8")
    index = blocks(html)["view-index"]
    assert isinstance(index, dict)
    fields = index["trial_fields"]
    [trial] = [t for t in index["trials"] if t[fields.index("key")] == "agent-a/t06/0"]
    assert index["outcomes"][trial[fields.index("outcome")]] == "interrupted"
    assert index["runs"][0]["exit"]["status"] == "130 (interrupted)"
    details = {d["key"]: d for d in _details_by_key(html)}
    assert details["agent-a/t06/0"]["problems"] == [] and "messages" not in details["agent-a/t06/0"]
    reported = invoke("trial", "report", str(run), "--format", "md")
    assert reported.exit_code == 0 and "| desk | t06 | — · 1 interrupted |" in reported.output


def test_open_hands_the_written_file_to_the_browser(hostile_runs: HostileRuns, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import webbrowser

    opened: list[str] = []
    monkeypatch.setattr(webbrowser, "open", lambda uri: opened.append(uri) or False)
    out = tmp_path / "report.html"
    code, output = view(hostile_runs.a.out, "--out", out, "--open")
    assert code == 0 and opened == [out.resolve().as_uri()]
    assert "no browser could be started" in output  # open() said it could not


def test_an_aborted_trial_leaves_only_its_task_out_of_pass_hat_k(hostile_runs: HostileRuns, tmp_path: Path) -> None:
    """Two trials of each of 12 tasks, one of t03's aborted: pass^2 averages over the other 11 and says so."""
    run = with_second_trials(hostile_runs.a.out, tmp_path / "run", aborted="t03")
    out = tmp_path / "report.html"
    code, output = view(run, "--out", out)
    assert code == 0, output
    index = blocks(out.read_text(encoding="utf-8"))["view-index"]
    assert isinstance(index, dict)
    stats = index["columns"][0]["stats"]
    # t00 fails both trials, t03 passed its one graded trial, the 10 others pass both:
    # ^1 = (0 + 1 + 10) / 12; ^2 over the 11 tasks with two graded trials = (0 + 10) / 11
    assert stats["pass_hat_k"] == {"1": round(11 / 12, 9), "2": round(10 / 11, 9)}
    assert stats["pass_hat_k_tasks"] == {"1": 12, "2": 11}
    reported = invoke("trial", "report", str(run), "--format", "md")
    assert reported.exit_code == 0, reported.output
    assert "| ^1 91.7%, ^2 90.9% (11 of 12 tasks) |" in reported.output


def _files(folder: Path) -> dict[Path, bytes]:
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_without_out_the_page_is_the_first_runs_report_html(hostile_runs: HostileRuns, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Not the current folder: RUN/report.html, and with two runs the first one's; the run still resumes."""
    import capplan.trials

    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(hostile_runs.a.out, a)
    shutil.copytree(hostile_runs.b.out, b)
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    b_before = _files(b)
    code, output = view(a)
    assert code == 0, output
    assert f"wrote {a / 'report.html'} (" in output
    assert list(here.iterdir()) == []
    index = blocks((a / "report.html").read_text(encoding="utf-8"))["view-index"]
    assert isinstance(index, dict) and [r["path"] for r in index["runs"]] == [str(a)]
    code, output = view(a, b)  # several runs: into the first one's folder, over its earlier page
    assert code == 0, output
    index = blocks((a / "report.html").read_text(encoding="utf-8"))["view-index"]
    assert isinstance(index, dict) and [r["path"] for r in index["runs"]] == [str(a), str(b)]
    assert _files(b) == b_before and list(here.iterdir()) == []
    # --out still wins, and may name the same place
    code, output = view(a, "--out", "elsewhere.html")
    assert code == 0 and (here / "elsewhere.html").is_file()
    code, output = view(b, "--out", b / "report.html")
    assert code == 0 and (b / "report.html").is_file()
    # the page is no foreign file to the run: trial report re-renders and a resume goes on, the page kept
    page = (a / "report.html").read_bytes()
    reported = invoke("trial", "report", str(a))
    assert reported.exit_code == 0, reported.output
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-view-0123456789abcdef")
    resumed = capplan.trials.run([hostile_runs.root / "tasks" / "desk"], [hostile_runs.root / "agent-a.json"], out=a,
                                 api_base="http://127.0.0.1:9/v1")  # every trial is done: nothing is called
    assert resumed.complete and (a / "report.html").read_bytes() == page


def test_the_default_page_is_not_written_through_a_link(hostile_runs: HostileRuns, tmp_path: Path) -> None:
    run = copy_run(hostile_runs, tmp_path)
    target = tmp_path / "elsewhere.html"
    target.write_text("keep")
    (run / "report.html").symlink_to(target)
    code, output = view(run)
    assert code == 2 and "error[VIEW_OUT]" in output and "report.html" in output and "hint:" in output
    assert "Traceback" not in output and target.read_text() == "keep" and (run / "report.html").is_symlink()


def test_no_other_place_inside_a_run_folder_is_taken(hostile_runs: HostileRuns, tmp_path: Path) -> None:
    run = copy_run(hostile_runs, tmp_path)
    before = sorted(p.relative_to(run) for p in run.rglob("*"))
    code, output = view(run, "--out", run / "view.html")
    assert code == 2 and "error[VIEW_OUT]" in output and "inside the run folder" in output
    assert "top-level report.html" in output
    assert sorted(p.relative_to(run) for p in run.rglob("*")) == before


@pytest.mark.fast_side
def test_calls_come_from_the_journal_and_the_page_is_the_same(hostile_runs: HostileRuns, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Each trial's calls from calls.jsonl, the rest of metrics.yaml parsed: the page as from the whole files.

    Where the journal does not account for a trial's calls (a line missing, no journal), that trial's
    metrics.yaml is read whole, and the page is still the same.
    """
    from capplan.trials.report import run_data
    from capplan.trials.report.run_data import load_runs
    from capplan.trials.report.view.payload import build_payload

    reads: list[tuple[str, bool]] = []
    original = run_data.read_trial_file

    def counted(root: Path, trial_dir: str, name: str, *, without_calls: int | None = None) -> object:
        reads.append((name, without_calls is not None))
        return original(root, trial_dir, name, without_calls=without_calls)

    monkeypatch.setattr(run_data, "read_trial_file", counted)
    runs = load_runs(list(hostile_runs.paths))
    whole = build_payload(runs, generated_by="test", from_journal=False)
    assert ("metrics.yaml", True) not in reads
    reads.clear()
    journalled = build_payload(runs, generated_by="test")
    assert reads.count(("metrics.yaml", True)) == 2 * len(TASKS) and ("metrics.yaml", False) not in reads
    assert journalled == whole and all(d["calls"] for d in whole.details)
    # one call line of t01 gone from a copy of run A: t01 is read from its metrics.yaml alone
    copy = copy_run(hostile_runs, tmp_path)
    lines = (copy / "calls.jsonl").read_text().splitlines(keepends=True)
    first_t01 = next(i for i, line in enumerate(lines) if '"kind":"call"' in line and "/t01/" in line)
    (copy / "calls.jsonl").write_text("".join(lines[:first_t01] + lines[first_t01 + 1:]))
    reads.clear()
    damaged = build_payload(load_runs([copy]), generated_by="test")
    assert reads.count(("metrics.yaml", False)) == 1
    assert damaged.details == build_payload(load_runs([copy]), generated_by="test", from_journal=False).details
