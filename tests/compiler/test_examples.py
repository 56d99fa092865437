"""Every command the example files tell a user to run works verbatim, and does what the example says."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli_runner import CAPPLAN
from tests.compiler.conftest import REPO

EXAMPLES = sorted([*(REPO / "examples" / "overlays").glob("*.yaml"), REPO / "examples" / "run.yaml"])
COMMENT_COMMAND = re.compile(r"^#\s+(capplan \S.*)$")


def commands_in(path: Path) -> list[str]:
    """The `capplan …` lines of a file's comments."""
    return [m.group(1) for line in path.read_text(encoding="utf-8").splitlines()
            if (m := COMMENT_COMMAND.match(line))]


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project laid out like the repository: examples/ and schemas/ under a git root."""
    root = tmp_path_factory.mktemp("project")
    (root / ".git").mkdir()
    shutil.copytree(REPO / "examples", root / "examples")
    shutil.copytree(REPO / "schemas", root / "schemas")
    return root


def run(cwd: Path, command: str) -> subprocess.CompletedProcess[str]:
    words = shlex.split(command)
    assert words[0] == "capplan"
    return subprocess.run([str(CAPPLAN), *words[1:]], cwd=cwd, capture_output=True, text=True, timeout=120,
                          check=False)


def test_every_example_names_commands() -> None:
    for path in EXAMPLES:
        assert commands_in(path), f"{path.name} tells the user no command to run"


@pytest.mark.parametrize("command", sorted({c for p in EXAMPLES for c in commands_in(p)
                                             if not c.startswith("capplan diff --base")}))
def test_each_command_runs_verbatim_from_the_repository_root(checkout: Path, command: str) -> None:
    done = run(checkout, command)
    assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
    assert "warning[" not in done.stdout + done.stderr  # the examples are clean under lint's rules


def test_diff_base_commands_run_in_a_git_checkout(tmp_path: Path) -> None:
    """`capplan diff --base origin/main …` needs a repository with that ref: make one."""
    repo = tmp_path / "repo"
    shutil.copytree(REPO / "examples", repo / "examples")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q", "-b", "main", str(repo)], check=True)
    subprocess.run([*git, "-C", str(repo), "add", "."], check=True)
    subprocess.run([*git, "-C", str(repo), "commit", "-qm", "examples"], check=True)
    subprocess.run([*git, "-C", str(repo), "update-ref", "refs/remotes/origin/main", "HEAD"], check=True)
    base_commands = [c for p in EXAMPLES for c in commands_in(p) if c.startswith("capplan diff --base")]
    assert base_commands
    for command in base_commands:
        done = run(repo, command)
        assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"


def test_ops_overlay_does_what_it_says_on_acme_support(checkout: Path) -> None:
    compile_line = next(c for c in commands_in(REPO / "examples" / "overlays" / "ops-overlay.yaml")
                        if c.startswith("capplan compile"))
    assert run(checkout, compile_line).returncode == 0
    plan = json.loads((checkout / "plans" / "acme-support.json").read_text(encoding="utf-8"))
    # the preset, the litellm entry and the binding all apply to the one model the overlay is for
    assert plan["effective_preset"] == "acme_support_ft"
    assert plan["litellm_model"]["key"] == "acme/support-ft-3"
    assert plan["allowed_openai_params"] == ["tool_choice", "tools"]
    binding = plan["binding"]
    assert binding["key"] == "acme" and binding["binding"]["endpoint"] == "https://llm-gateway.acme.internal/v1"
    assert binding["binding"]["api_key_env"] == "ACME_GATEWAY_KEY"
    assert plan["model"]["wire_model"] == "support-ft-3"
    assert plan["param_value_rules"]["tool_choice"]["required"]["action"] == "override"
    assert plan["provenance"]["binding.binding.endpoint"]["file"] == "examples/overlays/ops-overlay.yaml"
    # and the request it builds: the gateway, its key variable, tool_choice=required sent as auto
    request = checkout / "request.json"
    request.write_text(json.dumps({
        "messages": [{"role": "user", "content": "where is order 7?"}],
        "tools": [{"type": "function", "function": {"name": "lookup", "parameters": {
            "type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}}}],
        "tool_choice": "required"}), encoding="utf-8")
    env = {**os.environ, "ACME_GATEWAY_KEY": "test-key-value"}
    done = subprocess.run([str(CAPPLAN), "preview", "--plan", "plans/acme-support.json", "request.json",
                           "--format", "json"], cwd=checkout, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    kwargs = json.loads(done.stdout)
    assert kwargs["api_base"] == "https://llm-gateway.acme.internal/v1" and kwargs["model"] == "support-ft-3"
    assert kwargs["custom_llm_provider"] == "openai" and kwargs["tool_choice"] == "auto"
    assert "test-key-value" not in done.stdout


def test_eval_team_overlay_sets_what_it_says(checkout: Path) -> None:
    done = run(checkout, "capplan explain claude-opus loop.tool_output_max_chars --config examples/run.yaml "
                         "--presets-file examples/overlays/eval-team.yaml")
    assert done.returncode == 0, done.stderr
    assert "= 24000\n    set by overlay:examples/overlays/eval-team.yaml" in done.stdout
    done = run(checkout, "capplan explain grok param_value_rules.reasoning_effort --config examples/run.yaml "
                         "--presets-file examples/overlays/eval-team.yaml")
    assert '"action": "override"' in done.stdout and '"with": "low"' in done.stdout


#: where a user reads how to run the example trial packs, in reading order
TRIAL_DOCS = ("README.md", "docs/trials.md")


def readme_blocks_running(path_fragment: str) -> list[str]:
    """The ```sh blocks of the README and the trials page that run something under
    ``path_fragment`` (the trial packs carry no commands of their own: those pages are where a
    user reads how to run them)."""
    blocks: list[str] = []
    for page in TRIAL_DOCS:
        text = (REPO / page).read_text(encoding="utf-8")
        found = [b for b in re.findall(r"^```sh\n(.*?)^```", text, flags=re.M | re.S) if path_fragment in b]
        assert found, f"{page} no longer shows how to run the example trial packs"
        blocks += found
    return blocks


def test_the_readme_trial_commands_run_verbatim_on_the_example_packs(tmp_path: Path) -> None:
    blocks = readme_blocks_running("examples/trials/")
    assert blocks, "the README no longer shows how to run the example trial packs"
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    shutil.copytree(REPO / "examples", root / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PATH": f"{CAPPLAN.parent}{os.pathsep}{os.environ['PATH']}"}
    for block in blocks:  # in reading order: the first compiles and runs, the next ones resume the same run
        done = subprocess.run(["bash", "-e", "-c", block], cwd=root, env=env, capture_output=True, text=True,
                              timeout=600, check=False)
        assert done.returncode == 0, f"{block}\n{done.stdout}\n{done.stderr}"
    tasks = sorted((REPO / "examples" / "trials").glob("*/*.yaml"))
    runs = (root / "runs" / "demo" / "runs.jsonl").read_text(encoding="utf-8").splitlines()
    keys = {json.loads(line)["key"] for line in runs}
    assert len(keys) == len(tasks) * 2 * 2  # two agents, --trials 2 of every task, each once however often resumed
    summary = (root / "runs" / "demo" / "summary.md").read_text(encoding="utf-8")
    assert "| mock-careful | inventory_desk |" in summary and "| mock-sloppy | travel_desk |" in summary
