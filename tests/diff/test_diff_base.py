"""`capplan diff --base REV` in real git repositories: what changed, what REV lacked, what fails."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from capplan.compiler.diff.base import compile_against_base
from capplan.compiler.diff.base_args import CompileOptions
from capplan.compiler.diff.checkers import select_checkers
from capplan.compiler.diff.engine import diff_plan_sets
from capplan.compiler.diff.errors import DiffInputError
from capplan.presets import data_dir
from tests.diff.conftest import invoke
from tests.diff.scenario import BASE_ARGS, git, git_env, write

CAPPLAN = Path(sys.executable).parent / "capplan"
TIMEOUT = 120
Scenario = tuple[Path, dict[str, str]]


def run_capplan(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The installed console script, as CI runs it."""
    return subprocess.run([str(CAPPLAN), *args], cwd=cwd, env=git_env(), capture_output=True, text=True,
                          timeout=TIMEOUT, check=False)


def models_of(stdout: str) -> dict[str, dict[str, Any]]:
    return {m["key"]: m for m in json.loads(stdout)["models"]}


def fields(model: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["field"]: c for c in model["changes"]}


def test_base_reports_the_preset_and_overlay_changes(scenario: Scenario) -> None:
    _, commits = scenario
    out = invoke(*BASE_ARGS, "--format", "json")
    assert out.code == 1, out.stderr
    doc = json.loads(out.stdout)
    assert doc["old"] == f"HEAD~1 ({commits['first'][:12]})" and doc["new"] == "working tree"
    models = models_of(out.stdout)
    status = {k: m["status"] for k, m in models.items()}
    assert status == {"claude-opus-4.7": "changed", "kimi-k3": "changed", "muse": "changed", "gpt-4o": "unchanged",
                      "grok-4": "added", "qwen3-32b": "removed"}
    # the changed input files once, for the run; never under a model
    assert {c["field"] for c in doc["inputs"]} >= {"inputs.presets.sha256", "inputs.overlay.1.sha256"}
    assert all(c["check"] == "inputs" for c in doc["inputs"])
    assert not [c for m in models.values() for c in m["changes"] if c["check"] == "inputs"]
    watermark = fields(models["claude-opus-4.7"])["loop.context_watermark"]
    assert (watermark["check"], watermark["old"], watermark["new"]) == ("loop", 12000, 16000)
    assert watermark["layer"]["layer"] == "preset:anthropic_claude_4_7"
    assert watermark["layer"]["file"] == "data/model_presets.yaml"
    muse = fields(models["muse"])
    assert muse["allowed_openai_params"]["new"] == ["reasoning_effort", "tool_choice", "tools"]
    assert muse["allowed_openai_params"]["layer"]["file"] == "configs/ops-overlay.yaml"
    assert muse["param_value_rules.tool_choice"]["kind"] == "added"
    assert muse["param_value_rules.tool_choice"]["layer"]["layer"] == "preset:meta_muse"
    routing = fields(models["kimi-k3"])["openrouter.allow_fallbacks"]
    assert (routing["check"], routing["old"], routing["new"]) == ("routing", False, True)
    assert routing["layer"]["layer"] == "overlay:configs/ops-overlay.yaml"


def test_base_at_head_has_no_differences(scenario: Scenario) -> None:
    out = invoke("diff", "--base", "HEAD", "--data", "data", "--config", "configs/run.yaml")
    assert out.code == 0, out.stderr
    assert "no differences in 5 model(s)" in out.stdout


def test_uncommitted_edits_are_the_new_side(scenario: Scenario) -> None:
    root, _ = scenario
    overlay = root / "configs" / "ops-overlay.yaml"
    overlay.write_text(overlay.read_text().replace("reasoning_codec: openai", "reasoning_codec: none"))
    out = invoke("diff", "--base", "HEAD", "--data", "data", "--config", "configs/run.yaml", "--ignore", "inputs")
    assert out.code == 1
    assert 'policies.reasoning_codec.name: "openai" → "none"  [preset:meta_muse (configs/ops-overlay.yaml:4)]' \
        in out.stdout


def test_blast_radius_per_changed_input(scenario: Scenario) -> None:
    out = invoke(*BASE_ARGS, "--summary", "--format", "json")
    assert out.code == 1
    doc = json.loads(out.stdout)
    assert doc["format"] == "capplan-blast-radius"
    impact = {i["path"]: (i["status"], i["changes_plan"], i["does_not_change"]) for i in doc["inputs"]}
    assert impact == {
        "configs/ops-overlay.yaml": ("modified", ["kimi-k3", "muse"], ["claude-opus-4.7", "gpt-4o"]),
        "configs/run.yaml": ("modified", [], ["claude-opus-4.7", "gpt-4o", "kimi-k3", "muse"]),
        "data/model_presets.yaml": ("modified", ["claude-opus-4.7"], ["gpt-4o", "kimi-k3", "muse"]),
    }
    assert doc["models"] == {"changed": ["claude-opus-4.7", "kimi-k3", "muse"], "unchanged": ["gpt-4o"],
                             "unattributed": [], "added": ["grok-4"], "removed": ["qwen3-32b"]}
    text = invoke(*BASE_ARGS, "--summary").stdout
    assert "data/model_presets.yaml (modified; presets)\n  changes the plan of 1: claude-opus-4.7\n" in text


def test_single_changed_input_is_blamed_for_everything(scenario: Scenario) -> None:
    root, _ = scenario
    presets = root / "data" / "model_presets.yaml"
    presets.write_text(presets.read_text().replace("empty_retry_count: 1\n", "empty_retry_count: 2\n"))
    out = invoke("diff", "--base", "HEAD", "--data", "data", "--config", "configs/run.yaml", "--summary",
                 "--format", "json")
    assert out.code == 1
    (impact,) = json.loads(out.stdout)["inputs"]
    assert impact["path"] == "data/model_presets.yaml" and impact["changes_plan"] == ["kimi-k3"]


def test_diff_base_as_a_subprocess(scenario: Scenario) -> None:
    root, commits = scenario
    done = run_capplan(root, *BASE_ARGS, "--format", "markdown")
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith(f"## capplan diff: `HEAD~1 ({commits['first'][:12]})` → `working tree`\n")
    assert "| `grok-4` | added |" in done.stdout and done.stderr == ""
    same = run_capplan(root, "diff", "--base", "HEAD", "--data", "data", "--config", "configs/run.yaml")
    assert same.returncode == 0, same.stderr


def test_overlay_missing_at_rev_is_left_out_of_the_base_side(scenario: Scenario) -> None:
    root, _ = scenario
    write(root / "configs" / "extra-overlay.yaml", "providers:\n  openai:\n    tool_output_max_chars: 9000\n")
    out = invoke("diff", "--base", "HEAD", "--data", "data", "--config", "configs/run.yaml",
                 "--presets-file", "configs/extra-overlay.yaml", "--format", "json", "--ignore", "inputs")
    assert out.code == 1, out.stderr
    doc = json.loads(out.stdout)
    assert "configs/extra-overlay.yaml did not exist at HEAD: the base side is compiled without it" in doc["notes"]
    change = fields(models_of(out.stdout)["gpt-4o"])["loop.tool_output_max_chars"]
    assert (change["old"], change["new"]) == (None, 9000)


def test_run_config_missing_at_rev_means_no_base_models(scenario: Scenario) -> None:
    root, _ = scenario
    write(root / "configs" / "new-run.yaml", "models:\n  gpt-4o: {provider: openai, name: gpt-4o}\n")
    out = invoke("diff", "--base", "HEAD", "--data", "data", "--config", "configs/new-run.yaml", "--format", "json")
    assert out.code == 1, out.stderr
    doc = json.loads(out.stdout)
    assert "configs/new-run.yaml did not exist at HEAD: the base side has no models" in doc["notes"]
    assert [(m["key"], m["status"]) for m in doc["models"]] == [("gpt-4o", "added")]


def test_data_missing_at_rev_is_an_error(scenario: Scenario) -> None:
    root, _ = scenario
    shutil.copytree(root / "data", root / "data2")
    out = invoke("diff", "--base", "HEAD", "--data", "data2", "--config", "configs/run.yaml")
    assert out.code == 2 and out.stdout == ""
    assert "data2/model_presets.yaml did not exist at HEAD, and the base side cannot be compiled without it" \
        in out.stderr


def test_base_side_that_does_not_compile(scenario: Scenario) -> None:
    root, _ = scenario
    overlay = root / "configs" / "ops-overlay.yaml"
    good = overlay.read_text()
    overlay.write_text(good.replace("reasoning_codec: openai", "reasoning_codex: openai"))
    git(root, "commit", "-q", "-a", "-m", "typo")
    overlay.write_text(good)
    out = invoke("diff", "--base", "HEAD", "--data", "data", "--config", "configs/run.yaml")
    assert out.code == 2 and out.stdout == ""
    head = git(root, "rev-parse", "HEAD")[:12]
    assert f"capplan diff: the base side (HEAD ({head})) does not compile:\n" in out.stderr
    assert "configs/ops-overlay.yaml:4:5: error[unknown-key]: presets.meta_muse.reasoning_codex" in out.stderr


def test_working_tree_that_does_not_compile(scenario: Scenario) -> None:
    root, _ = scenario
    overlay = root / "configs" / "ops-overlay.yaml"
    overlay.write_text(overlay.read_text().replace("reasoning_codec: openai", "reasoning_codec: no_such_codec"))
    out = invoke(*BASE_ARGS)
    assert out.code == 2 and out.stdout == ""
    assert "capplan diff: the working tree does not compile:\n" in out.stderr
    assert "configs/ops-overlay.yaml:4:" in out.stderr and "no_such_codec" in out.stderr


def test_overlay_named_by_rev_config_but_missing_at_rev(scenario: Scenario) -> None:
    root, _ = scenario
    git(root, "rm", "-q", "--cached", "configs/ops-overlay.yaml")
    git(root, "commit", "-q", "-m", "forget the overlay")
    out = invoke("diff", "--base", "HEAD", "--data", "data", "--config", "configs/run.yaml")
    assert out.code == 2
    assert "does not compile" in out.stderr and "configs/ops-overlay.yaml:1:1: error[file-not-found]" in out.stderr


def test_rev_config_naming_an_overlay_outside_the_repository(scenario: Scenario) -> None:
    root, _ = scenario
    run = root / "configs" / "run.yaml"
    run.write_text(run.read_text().replace("presets_file: ops-overlay.yaml", "presets_file: ../../elsewhere.yaml"))
    git(root, "commit", "-q", "-a", "-m", "overlay from outside")
    out = invoke(*BASE_ARGS[:2], "HEAD", *BASE_ARGS[3:])
    assert out.code == 2
    assert "configs/run.yaml at HEAD names the overlay '../../elsewhere.yaml', which is outside the repository" \
        in out.stderr


def test_files_outside_the_repository_are_read_from_disk_on_both_sides(scenario: Scenario, tmp_path: Path) -> None:
    outside = tmp_path / "team-overlay.yaml"
    write(outside, "providers:\n  openai:\n    default_max_turns: 40\n")
    out = invoke("diff", "--base", "HEAD", "--data", "data", "--config", "configs/run.yaml",
                 "--presets-file", str(outside), "--format", "json")
    assert out.code == 0, out.stderr
    assert f"--presets-file {outside} is outside the repository, so both sides read it from disk" \
        in json.loads(out.stdout)["notes"]


def test_installed_bundled_data_is_shared_by_both_sides(scenario: Scenario) -> None:
    out = invoke("diff", "--base", "HEAD~1", "--config", "configs/run.yaml", "--format", "json")
    assert out.code == 1, out.stderr
    doc = json.loads(out.stdout)
    assert any(n.startswith("the bundled presets, providers and pricing come from the installed capplan")
               for n in doc["notes"])
    assert "loop.context_watermark" not in out.stdout  # the data/ edit is not read without --data


def test_bundled_data_inside_the_repository_is_taken_at_rev(scenario: Scenario) -> None:
    root, _ = scenario
    shutil.copytree(data_dir(), root / "presets", ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    git(root, "add", "presets")
    git(root, "commit", "-q", "-m", "vendor capplan's bundled data")
    presets = root / "presets" / "model_presets.yaml"
    presets.write_text(presets.read_text().replace("context_watermark: 8000\n", "context_watermark: 7000\n"))
    sides = compile_against_base("HEAD", CompileOptions(), cwd=root, bundled=root / "presets")
    report = diff_plan_sets(sides.old, sides.new, select_checkers(None, ["inputs"]),
                            old_label=sides.old_label, new_label=sides.new_label)
    assert [(m.key, m.status) for m in report.with_status("changed")] == [("kimi-k3", "changed")]
    (change,) = report.with_status("changed")[0].changes
    assert (change.field, change.old, change.new) == ("loop.context_watermark", 8000, 7000)
    assert change.source is not None and change.source.file == "presets/model_presets.yaml"
    inputs = sides.new["kimi-k3"].body["inputs"]
    assert inputs["run_config"]["path"] == "presets/catalogue.yaml" and not sides.notes
    git(root, "rm", "-q", "--cached", "presets/catalogue.yaml")
    git(root, "commit", "-q", "-m", "untrack the catalogue")
    with pytest.raises(DiffInputError, match="presets/catalogue.yaml did not exist at HEAD, and the base side"):
        compile_against_base("HEAD", CompileOptions(), cwd=root, bundled=root / "presets")


def test_missing_revision_without_a_remote(scenario: Scenario) -> None:
    out = invoke("diff", "--base", "no-such-branch", "--config", "configs/run.yaml")
    assert out.code == 2 and out.stdout == ""
    assert ("revision 'no-such-branch' is not in this repository (no such commit or ref), and the repository "
            "has no remote to fetch it from") in out.stderr
    assert "--base: '-x' is not a revision" in invoke("diff", "--base=-x").stderr


def test_not_a_git_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_git_env: None) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    out = invoke("diff", "--base", "HEAD")
    assert out.code == 2 and f"--base needs a git repository, and {tmp_path} is not inside one" in out.stderr


def _clone(origin: Path, dest: Path, *flags: str) -> Path:
    git(origin.parent, "clone", "-q", *flags, f"file://{origin}", str(dest))
    return dest


def _suggested_fetch(stderr: str) -> list[str]:
    line = stderr.split("fetch it first:\n", 1)[1].splitlines()[0]
    return shlex.split(line)


def test_shallow_clone_missing_rev_then_fetched(scenario: Scenario, tmp_path: Path) -> None:
    root, commits = scenario
    clone = _clone(root, tmp_path / "clone", "--depth=1")
    first = commits["first"]
    missing = run_capplan(clone, "diff", "--base", first, "--data", "data", "--config", "configs/run.yaml")
    assert missing.returncode == 2 and missing.stdout == "" and "Traceback" not in missing.stderr
    assert (f"revision '{first}' is not in this repository (this is a shallow clone, which holds only the "
            f"commits it fetched); fetch it first:\n    git fetch --depth=1 origin {first}\n") in missing.stderr
    fetch = _suggested_fetch(missing.stderr)
    assert fetch[:2] == ["git", "fetch"]
    git(clone, *fetch[1:])
    done = run_capplan(clone, "diff", "--base", first, "--data", "data", "--config", "configs/run.yaml",
                       "--format", "json")
    assert done.returncode == 1, done.stderr
    assert models_of(done.stdout)["grok-4"]["status"] == "added"


def test_shallow_clone_of_a_remote_branch(scenario: Scenario, tmp_path: Path) -> None:
    root, commits = scenario
    git(root, "branch", "base", commits["first"])
    clone = _clone(root, tmp_path / "clone", "--depth=1", "--branch", "main")
    args = ("diff", "--base", "origin/base", "--data", "data", "--config", "configs/run.yaml")
    missing = run_capplan(clone, *args)
    assert missing.returncode == 2
    fetch = _suggested_fetch(missing.stderr)
    assert fetch == ["git", "fetch", "--depth=1", "origin", "base:refs/remotes/origin/base"]
    git(clone, *fetch[1:])
    assert run_capplan(clone, *args).returncode == 1
    nope = run_capplan(clone, "diff", "--base", "origin/nope", "--config", "configs/run.yaml")
    assert nope.returncode == 2 and "git fetch --depth=1 origin nope:refs/remotes/origin/nope" in nope.stderr


def test_full_clone_missing_rev_suggests_fetch_head(scenario: Scenario, tmp_path: Path) -> None:
    root, _ = scenario
    clone = _clone(root, tmp_path / "clone")
    out = run_capplan(clone, "diff", "--base", "release-2", "--config", "configs/run.yaml")
    assert out.returncode == 2
    assert ("revision 'release-2' is not in this repository (no such commit or ref); fetch it first:\n"
            "    git fetch --depth=1 origin release-2   (then pass --base FETCH_HEAD)") in out.stderr


def test_run_from_a_subfolder_of_the_repository(scenario: Scenario, monkeypatch: pytest.MonkeyPatch) -> None:
    root, _ = scenario
    monkeypatch.chdir(root / "configs")
    out = invoke("diff", "--base", "HEAD~1", "--data", "../data", "--config", "run.yaml", "--format", "json")
    assert out.code == 1, out.stderr
    change = fields(models_of(out.stdout)["claude-opus-4.7"])["loop.context_watermark"]
    # named relative to the repository root, not to where the command ran
    assert change["layer"]["file"] == "data/model_presets.yaml"
    assert models_of(out.stdout)["gpt-4o"]["status"] == "unchanged"
    # paths line up on both sides: only digests differ
    assert all(c["field"].endswith(".sha256") or c["field"] == "models_fingerprint"
               for c in json.loads(out.stdout)["inputs"])


def test_diff_never_imports_litellm() -> None:
    code = ("import sys, capplan.cli.diff_cmd, capplan.compiler.diff.base, capplan.compiler.diff.git_revision; "
            "sys.exit('litellm' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT, check=False)
    assert done.returncode == 0, done.stderr
