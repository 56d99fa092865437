"""The pre-commit hook and the CI workflow example run real capplan commands that exist."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
from click.testing import CliRunner
import pytest
from ruamel.yaml import YAML

from capplan.cli import main

REPO = Path(__file__).resolve().parents[2]
CAPPLAN = Path(sys.executable).parent / "capplan"
TIMEOUT = 120


def load(path: Path) -> Any:
    return YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def hook() -> dict[str, Any]:
    (only,) = load(REPO / ".pre-commit-hooks.yaml")
    return dict(only)


def test_hook_declaration(hook: dict[str, Any]) -> None:
    assert hook["id"] == "capplan-lint" and hook["language"] == "python"
    assert hook["entry"] == "capplan lint" and hook["types"] == ["yaml"]
    # pre-commit rejects keys it does not know; these are the ones a hook manifest may carry
    assert set(hook) <= {"id", "name", "entry", "language", "files", "exclude", "types", "types_or",
                         "exclude_types", "args", "description", "minimum_pre_commit_version", "pass_filenames",
                         "always_run", "require_serial", "stages", "verbose", "language_version",
                         "additional_dependencies", "log_file", "fail_fast"}


@pytest.mark.parametrize("path, matched", [
    ("examples/overlays/ops-overlay.yaml", True),
    ("examples/overlays/eval-team.yaml", True),
    ("presets/model_presets.yaml", True),
    ("presets/providers.yaml", True),
    ("configs/ops-overlay.yml", True),
    ("team/overlays/x.yaml", True),
    (".github/workflows/capplan.yml", False),
    ("docker-compose.yaml", False),
    ("presets/catalogue.yaml", False),
])
def test_hook_files_pattern(hook: dict[str, Any], path: str, matched: bool) -> None:
    # pre-commit matches `files` with re.search against the repo-relative path
    assert bool(re.search(hook["files"], path)) is matched


def test_hook_entry_runs_on_the_example_overlays(hook: dict[str, Any]) -> None:
    files = sorted(str(p.relative_to(REPO)) for p in (REPO / "examples" / "overlays").glob("*.yaml"))
    entry = shlex.split(hook["entry"])
    done = subprocess.run([str(CAPPLAN), *entry[1:], *files], cwd=REPO, capture_output=True, text=True,
                          timeout=TIMEOUT, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"capplan lint: {len(files)} file(s) checked: no problems\n", "")
    bad = subprocess.run([str(CAPPLAN), *entry[1:], "tests/compiler/bad_inputs/unknown_keys.yaml"], cwd=REPO,
                         capture_output=True, text=True, timeout=TIMEOUT, check=False)
    assert bad.returncode == 2 and "error[unknown-key]" in bad.stdout


def _workflow_commands() -> list[list[str]]:
    """Every `capplan …` command line in the example workflow, without shell redirections."""
    workflow = load(REPO / "examples" / "ci" / "capplan.yml")
    out = []
    for job in workflow["jobs"].values():
        for step in job["steps"]:
            for line in str(step.get("run", "")).splitlines():
                line = line.strip()
                if line.startswith("capplan "):
                    words = shlex.split(line.split("|")[0].split(">")[0])
                    out.append(words)
    return out


def test_workflow_shape() -> None:
    workflow = load(REPO / "examples" / "ci" / "capplan.yml")
    assert "pull_request" in workflow["on"]
    steps = [s for job in workflow["jobs"].values() for s in job["steps"]]
    text = (REPO / "examples" / "ci" / "capplan.yml").read_text(encoding="utf-8")
    assert "git fetch --no-tags --depth=1 origin" in text
    assert '--format markdown | tee plan-diff.md >> "$GITHUB_STEP_SUMMARY"' in text
    assert "gh pr comment" in text and "--body-file plan-diff.md" in text
    assert any(s.get("uses", "").startswith("actions/checkout@") for s in steps)


def test_workflow_runs_lint_compile_check_and_diff() -> None:
    commands = _workflow_commands()
    subcommands = [c[1] for c in commands]
    assert "lint" in subcommands and "compile" in subcommands and "diff" in subcommands
    lint = next(c for c in commands if c[1] == "lint")
    assert lint[2:4] == ["--format", "github"]
    assert "--check" in next(c for c in commands if c[1] == "compile")
    diff = next(c for c in commands if c[1] == "diff")
    assert diff[2:4] == ["--base", "origin/${GITHUB_BASE_REF}"] and "markdown" in diff


@pytest.mark.parametrize("words", _workflow_commands(), ids=lambda w: " ".join(w[:2]))
def test_workflow_commands_parse_with_the_real_cli(words: list[str]) -> None:
    """Each command's options exist: click parses the line exactly as the runner's shell passes it."""
    command = main.get_command(click.Context(main), words[1])
    assert command is not None, f"no such command: {words[1]}"
    try:
        command.make_context(words[1], words[2:])
    except click.UsageError as exc:
        pytest.fail(f"`{' '.join(words)}` does not parse: {exc.format_message()}")


def test_a_misspelt_option_would_be_caught() -> None:
    command = main.get_command(click.Context(main), "diff")
    assert command is not None
    with pytest.raises(click.NoSuchOption):
        command.make_context("diff", ["--bsae", "origin/main"])


def _pasted_hook_configs() -> list[Any]:
    """The `.pre-commit-config.yaml` the README and docs/ci.md tell users to paste."""
    found = []
    for page in ("README.md", "docs/ci.md"):
        text = (REPO / page).read_text(encoding="utf-8")
        blocks = [b for b in re.findall(r"^```yaml\n(.*?)^```", text, flags=re.M | re.S) if "capplan-lint" in b]
        assert len(blocks) == 1, f"{page} shows {len(blocks)} pre-commit snippets"
        found.append(YAML(typ="safe", pure=True).load(blocks[0]))
    return found


def test_the_pasted_pre_commit_snippet_is_a_local_hook_that_runs_capplan_lint(hook: dict[str, Any]) -> None:
    readme, ci_page = _pasted_hook_configs()
    assert readme == ci_page
    (repo,) = readme["repos"]
    # a `rev:` must name a tag that exists; capplan publishes none, so the hook is local and needs no rev
    assert repo["repo"] == "local" and "rev" not in repo
    (local,) = repo["hooks"]
    # the keys pre-commit requires of a local hook, and only keys it knows
    assert {"id", "name", "entry", "language"} <= set(local) <= set(hook) | {"files"}
    assert local["language"] == "system"  # the capplan on PATH, no environment for pre-commit to build
    assert {k: local[k] for k in ("id", "entry", "types", "files")} == {k: hook[k] for k in ("id", "entry", "types", "files")}
    entry = shlex.split(local["entry"])
    assert entry[0] == "capplan"
    files = sorted(str(p.relative_to(REPO)) for p in (REPO / "examples" / "overlays").glob("*.yaml"))
    # pre-commit appends the staged files that match `files` to the entry; in this process, as the command runs
    staged = [f for f in files if re.search(local["files"], f)]
    assert staged == files
    runner = CliRunner()
    done = runner.invoke(main, [*entry[1:], *(str(REPO / f) for f in staged)])
    assert (done.exit_code, done.output) == (0, f"capplan lint: {len(files)} file(s) checked: no problems\n")
    bad = runner.invoke(main, [*entry[1:], str(REPO / "tests/compiler/bad_inputs/unknown_keys.yaml")])
    assert bad.exit_code == 2 and "error[unknown-key]" in bad.output
