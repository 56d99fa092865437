"""The example CI workflow, run as GitHub would run it: each step's script, verbatim, in bash.

The repository it runs in is laid out as the workflow's `env:` says, on a pull-request branch
cloned with depth 1 from a local "origin". Two steps are left out: installing capplan (the
test puts this checkout's environment on PATH instead of installing from an index), and the
comment step, which needs GitHub (`gh` and a token); ``test_ci_recipes.py`` checks its shape.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.cli_runner import BIN
from tests.compiler.conftest import REPO

WORKFLOW = REPO / "examples" / "ci" / "capplan.yml"
TIMEOUT = 180
RUN = "models:\n  gpt-4o: {provider: openai, name: gpt-4o}\n  kimi: {provider: openrouter, name: moonshotai/kimi-k3}\n"


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=cwd, check=True,
                   capture_output=True, timeout=TIMEOUT)


def capplan(cwd: Path, *args: str) -> None:
    done = subprocess.run([str(BIN / "capplan"), *args], cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr


def pull_request(tmp_path: Path) -> Path:
    """origin/main holds configs, overlays and golden plans; the branch changes one model and its golden plan."""
    base = tmp_path / "base"
    base.mkdir()
    git(base, "init", "-q", "-b", "main")
    (base / "configs").mkdir()
    (base / "configs" / "run.yaml").write_text(RUN, encoding="utf-8")
    (base / "overlays").mkdir()
    shutil.copy(REPO / "examples" / "overlays" / "eval-team.yaml", base / "overlays")
    capplan(base, "compile", "--config", "configs/run.yaml", "--update-golden", "--golden", "golden/plans")
    git(base, "add", "-A")
    git(base, "commit", "-qm", "base")
    git(tmp_path, "clone", "-q", "--bare", str(base), "origin.git")
    pr = tmp_path / "pr"
    git(tmp_path, "clone", "-q", "--depth=1", f"file://{tmp_path / 'origin.git'}", str(pr))
    git(pr, "checkout", "-q", "-b", "feature")
    run = pr / "configs" / "run.yaml"
    run.write_text(run.read_text(encoding="utf-8").replace("name: gpt-4o}", "name: gpt-4o, temperature: 0.3}"),
                   encoding="utf-8")
    capplan(pr, "compile", "--config", "configs/run.yaml", "--update-golden", "--golden", "golden/plans")
    git(pr, "commit", "-qam", "gpt-4o at temperature 0.3")
    git(pr, "remote", "set-branches", "origin", "*")
    return pr


def run_step(step: dict[str, Any], cwd: Path, env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """As the runner does: `shell: bash` is `bash --noprofile --norc -eo pipefail`, the default `bash -e`."""
    script = tmp_path / "step.sh"
    script.write_text(step["run"], encoding="utf-8")
    shell = ["bash", "--noprofile", "--norc", "-eo", "pipefail"] if step.get("shell") == "bash" else ["bash", "-e"]
    return subprocess.run([*shell, str(script)], cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT)


def test_the_workflow_steps_run_verbatim_on_a_pull_request(tmp_path: Path) -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    pr = pull_request(tmp_path)
    summary, output = tmp_path / "summary.md", tmp_path / "output"
    env = {**os.environ, **{k: str(v) for k, v in workflow["env"].items()},
           "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "GITHUB_BASE_REF": "main",
           "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_OUTPUT": str(output)}
    ran = []
    for step in workflow["jobs"]["plans"]["steps"]:
        if "run" not in step or "gh pr comment" in step["run"] or "pip\" install" in step["run"]:
            continue
        done = run_step(step, pr, env, tmp_path)
        assert done.returncode == 0, f"{step.get('name')}\n{done.stdout}\n{done.stderr}"
        ran.append(step["name"])
    assert ran == ["Fetch the base commit", "Lint (annotates the pull request)", "Golden plans are up to date",
                   "Provider conformance (annotates each rejection with the provider's error)",
                   "Plan diff against the base branch", "Credential routing unchanged"]
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("## capplan diff: `origin/main (") and "`gpt-4o` | changed | defaults |" in text
    assert "request_defaults.temperature" in text and "`kimi`" not in text  # only the plan that changed
    assert (pr / "plan-diff.md").read_text(encoding="utf-8") == text
    assert "differs=true" in output.read_text(encoding="utf-8").splitlines()


def test_a_stale_golden_plan_fails_the_job(tmp_path: Path) -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    pr = pull_request(tmp_path)
    run = pr / "configs" / "run.yaml"
    run.write_text(run.read_text(encoding="utf-8").replace("temperature: 0.3", "temperature: 0.5"), encoding="utf-8")
    env = {**os.environ, **{k: str(v) for k, v in workflow["env"].items()},
           "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    step = next(s for s in workflow["jobs"]["plans"]["steps"] if s.get("name") == "Golden plans are up to date")
    done = run_step(step, pr, env, tmp_path)
    assert done.returncode == 1 and "gpt-4o" in done.stdout + done.stderr


def test_a_changed_binding_fails_the_credential_routing_step(tmp_path: Path) -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    pr = pull_request(tmp_path)
    run = pr / "configs" / "run.yaml"
    # the same model through another provider: its key now goes to another binding's endpoint
    run.write_text(run.read_text(encoding="utf-8").replace("{provider: openai, name: gpt-4o,",
                                                           "{provider: openrouter, name: openai/gpt-4o,"),
                   encoding="utf-8")
    capplan(pr, "compile", "--config", "configs/run.yaml", "--update-golden", "--golden", "golden/plans")
    git(pr, "commit", "-qam", "gpt-4o through openrouter")
    env = {**os.environ, **{k: str(v) for k, v in workflow["env"].items()},
           "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "GITHUB_BASE_REF": "main"}
    steps = {s.get("name"): s for s in workflow["jobs"]["plans"]["steps"]}
    fetched = run_step(steps["Fetch the base commit"], pr, env, tmp_path)
    assert fetched.returncode == 0, fetched.stderr
    done = run_step(steps["Credential routing unchanged"], pr, env, tmp_path)
    assert done.returncode == 3, f"{done.stdout}\n{done.stderr}"
    (tmp_path / "plain").mkdir()
    plain_pr = pull_request(tmp_path / "plain")
    assert run_step(steps["Fetch the base commit"], plain_pr, env, tmp_path).returncode == 0
    plain = run_step(steps["Credential routing unchanged"], plain_pr, env, tmp_path)
    assert plain.returncode == 0, f"{plain.stdout}\n{plain.stderr}"
