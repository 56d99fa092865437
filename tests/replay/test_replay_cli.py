"""Entry points: the script from the repository root, the module, and `capplan replay`."""

from __future__ import annotations

import os
import subprocess
import sys

from .conftest import REPO_ROOT
from .fakes.chat import ChatProvider
from .helpers import FAKE_KEY, custom_run, prices_file
from tests.cli_runner import invoke

SCRIPT = "evals/reasoning_replay/harness.py"


def script(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, SCRIPT, *argv], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=120, env=env)


def test_script_help_teaches_the_method_and_every_command():
    done = script("--help")
    assert done.returncode == 0
    for words in ("prompt_tokens delta", "in_loop", "cross_turn", "consumes-all-turns", "models", "run",
                  "report", "~/.hermes/auth.json", "exit codes"):
        assert words in done.stdout
    run_help = script("run", "--help").stdout
    for option in ("--want-direct", "--lane-attempts", "--budget", "--key-env", "--base-url", "portal-max"):
        assert option in run_help


def test_script_runs_end_to_end_as_a_real_process(serve, tmp_path, home):
    server = serve(ChatProvider(key=FAKE_KEY))
    out = tmp_path / "out"
    env = {**os.environ, "HOME": str(home), "FAKE_KEY": FAKE_KEY}
    run = script(*custom_run(server.base, out, prices_file(tmp_path), "--steps", "text"), env=env)
    assert run.returncode == 0, run.stderr
    report = script("report", "--out", str(out), env=env)
    assert report.returncode == 0 and "consumes-all-turns" in report.stdout
    bad = script("run", "--route", "nuos", "--models", "m", "--out", str(out), env=env)
    assert bad.returncode == 2 and bad.stderr.startswith("error: unknown route") and "Traceback" not in bad.stderr


def test_module_entry_point():
    done = subprocess.run([sys.executable, "-m", "capplan.evals.reasoning_replay.harness", "report", "--help"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "--overlay" in done.stdout


def test_capplan_replay_runs_the_same_code(serve, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", FAKE_KEY)
    server = serve(ChatProvider(key=FAKE_KEY, reads=()))
    out = tmp_path / "out"
    run = invoke("replay", *custom_run(server.base, out, prices_file(tmp_path), "--steps", "text"))
    assert run.exit_code == 0, run.output
    report = invoke("replay", "report", "--out", str(out))
    assert report.exit_code == 0 and "accepted-ignored" in report.output
    helped = invoke("replay", "--help")
    assert helped.exit_code == 0 and "prompt_tokens delta" in helped.output
    bad = invoke("replay", "run", "--route", "nuos", "--models", "m", "--out", str(out))
    assert bad.exit_code == 2 and "unknown route" in bad.output
