"""`capplan replay` is click (help, checks, completion) and runs the harness on the same argv."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from capplan.cli.replay_cmd import _argv, replay_cmd
from capplan.evals.reasoning_replay.commands.cli import build_parser
from tests.cli_runner import invoke

#: the console script: completion is keyed by the program's name (_CAPPLAN_COMPLETE)
CAPPLAN = Path(sys.executable).with_name("capplan")


def _sub(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            sub: argparse.ArgumentParser = action.choices[name]
            return sub
    raise AssertionError(name)


def test_every_harness_option_is_a_click_option_with_its_default_and_choices() -> None:
    parser = build_parser("capplan replay")
    assert isinstance(replay_cmd, click.Group) and sorted(replay_cmd.commands) == ["models", "report", "run"]
    for name, command in replay_cmd.commands.items():
        harness = {a.dest: a for a in _sub(parser, name)._actions if a.option_strings and a.dest != "help"}
        ours = {p.name: p for p in command.params if isinstance(p, click.Option)}
        assert sorted(ours) == sorted(harness), name
        for dest, action in harness.items():
            option = ours[dest]
            assert set(option.opts) == set(action.option_strings), dest
            assert option.required == action.required, dest
            if action.choices is not None:
                assert isinstance(option.type, click.Choice) and list(option.type.choices) == list(action.choices)
            if action.default is not None and not isinstance(action, argparse._StoreTrueAction):
                assert option.default == action.default, dest


ARGVS = [
    ["run", "--route", "custom", "--kind", "chat", "--base-url", "http://127.0.0.1:9/v1", "--key-env", "K",
     "--models", "a,b", "--out", "o", "--budget", "2.5", "--workers", "1", "--quiet", "--probe", "alt"],
    ["run", "--route", "nous", "--models", "x", "--out", "o", "--turn1-tool-choice", "tool", "--timeout", "30"],
    ["report", "--out", "o", "--overlay"],
    ["report", "--out", "o", "--overlay", "snippet.yaml", "--no-heatmap", "--overlay-route", "llamacpp"],
    ["models", "--route", "openrouter", "--json"],
    ["models"],
]


@pytest.mark.parametrize("argv", ARGVS, ids=lambda a: " ".join(a[:3]))
def test_click_hands_the_harness_the_settings_its_own_parser_reads(argv: list[str]) -> None:
    parser = build_parser("capplan replay")
    command = replay_cmd.commands[argv[0]]
    ctx = command.make_context(argv[0], argv[1:])
    rebuilt = _argv(_sub(parser, argv[0]), dict(ctx.params))
    assert vars(parser.parse_args([argv[0], *rebuilt])) == vars(parser.parse_args(argv))


def test_click_refuses_a_bad_choice_with_a_usage_error() -> None:
    done = invoke("replay", "run", "--route", "x", "--kind", "grpc", "--models", "m",
                  "--out", "o")
    assert done.exit_code == 2 and "Invalid value for '--kind': 'grpc' is not one of" in done.output


def test_help_is_click_s_and_keeps_the_harness_manual() -> None:
    helped = invoke("replay", "run", "--help", terminal_width=120)
    assert helped.exit_code == 0
    assert "replay run [OPTIONS]" in helped.output.splitlines()[0]
    assert "--turn1-tool-choice [auto|required|tool]" in helped.output and "[required]" in helped.output


def _complete(words: str, cword: int) -> list[str]:
    env = {**os.environ, "COMP_WORDS": words, "COMP_CWORD": str(cword), "_CAPPLAN_COMPLETE": "bash_complete"}
    done = subprocess.run([str(CAPPLAN)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [line.split(",", 1)[1] for line in done.stdout.splitlines()]


@pytest.mark.parametrize("shell, marker", [("bash", "complete -o nosort -F _capplan_completion capplan"),
                                           ("zsh", "compdef _capplan_completion capplan"),
                                           ("fish", "complete --no-files --command capplan")])
def test_the_completion_script_is_produced_for_each_shell(shell: str, marker: str, tmp_path: Path) -> None:
    env = {**os.environ, "_CAPPLAN_COMPLETE": f"{shell}_source"}
    done = subprocess.run([str(CAPPLAN)], env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0 and marker in done.stdout, done.stdout + done.stderr
    assert "_CAPPLAN_COMPLETE=" in done.stdout


def test_completion_reaches_replay_s_subcommands_choices_and_routes() -> None:
    assert {"replay", "init", "lint"} <= set(_complete("capplan ", 1))
    assert _complete("capplan replay ", 2) == ["models", "report", "run"]
    assert _complete("capplan replay run --kind ", 4) == ["chat", "responses", "gemini"]
    routes = _complete("capplan replay run --route open", 4)
    assert routes and all(r.startswith("open") for r in routes) and "openrouter" in routes


def test_replay_run_says_what_to_run_next_on_a_terminal_unless_quiet(serve, tmp_path: Path, home: Path) -> None:
    from tests.compiler.terminal_run import run_on_terminal

    from .fakes.chat import ChatProvider
    from .helpers import FAKE_KEY, custom_run, prices_file

    server = serve(ChatProvider(key=FAKE_KEY))
    out = tmp_path / "out"
    env = {**os.environ, "HOME": str(home), "FAKE_KEY": FAKE_KEY}
    argv = [a for a in custom_run(server.base, out, prices_file(tmp_path), "--steps", "text") if a != "--quiet"]
    code, _, shown = run_on_terminal([str(CAPPLAN), "replay", *argv], tmp_path, env)
    assert code == 0, shown
    assert shown.rstrip().splitlines()[-1] == f"next: capplan replay report --out {out}"
    code, _, shown = run_on_terminal([str(CAPPLAN), "replay", *argv, "--quiet"], tmp_path, env)
    assert code == 0 and "next:" not in shown
