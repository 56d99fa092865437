"""``capplan replay``: the reasoning-replay consumption eval (evals/reasoning_replay), on click.

The harness's argument table (``build_parser`` in its commands/cli.py) is the one place its
options are declared: this module turns each of its subcommands and options into click ones, so
``capplan replay`` parses, helps and completes like every other capplan command, while
``python evals/reasoning_replay/harness.py …`` keeps its own argparse front end. After click has
checked the arguments, they are handed to the harness's ``main`` as the same argv, so both
entry points run exactly the same code on exactly the same settings.
"""

from __future__ import annotations

import argparse
from typing import Any

import click

from capplan.cli.common import next_hint
from capplan.cli.errors import CommandExit, ExitCode

PROG = "capplan replay"


def _harness_parser() -> argparse.ArgumentParser:
    from capplan.evals.reasoning_replay.commands.cli import build_parser

    return build_parser(PROG)


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # argparse keeps its table here; the harness declares nothing else
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _help_of(parser: argparse.ArgumentParser, name: str) -> str:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                if choice.dest == name:
                    return choice.help or ""
    return ""


def _click_type(action: argparse.Action) -> Any:
    if action.choices is not None:
        return click.Choice([str(c) for c in action.choices])
    return {int: click.INT, float: click.FLOAT}.get(action.type, click.STRING)  # type: ignore[call-overload]


def _option(action: argparse.Action) -> click.Option:
    """One harness option as a click option with the same name, default, choices and help."""
    names = list(action.option_strings)
    dest = action.dest
    help_text = (action.help or "").replace("%(prog)s", PROG)
    if isinstance(action, argparse._StoreTrueAction):
        return click.Option([*names, dest], is_flag=True, default=False, help=help_text)
    if action.nargs == "?":  # `--overlay [FILE]`: the flag alone means its const
        return click.Option([*names, dest], is_flag=False, flag_value=action.const, default=action.default,
                            metavar=action.metavar, help=help_text)
    complete = _complete_route if dest == "route" else None
    return click.Option([*names, dest], type=_click_type(action), default=action.default, required=action.required,
                        metavar=action.metavar, help=help_text, shell_complete=complete)


def _complete_route(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """Shell completion of --route: the harness's named routes and 'custom'."""
    from capplan.evals.reasoning_replay.routes import ROUTES

    return [r for r in (*sorted(ROUTES), "custom") if r.startswith(incomplete)]


def _argv(sub: argparse.ArgumentParser, values: dict[str, Any]) -> list[str]:
    """The harness's argv for the values click parsed (options left at their default are left out)."""
    argv: list[str] = []
    for action in sub._actions:
        if not action.option_strings or action.dest == "help":
            continue
        value = values.get(action.dest)
        flag = action.option_strings[-1] if action.option_strings[-1].startswith("--") else action.option_strings[0]
        if isinstance(action, argparse._StoreTrueAction):
            argv += [flag] if value else []
        elif value is None or (value == action.default and not action.required):
            continue
        elif action.nargs == "?" and value == action.const:
            argv.append(flag)
        else:
            argv += [flag, str(value)]
    return argv


def _subcommand(name: str, sub: argparse.ArgumentParser, short: str) -> click.Command:
    def run(**values: Any) -> None:
        from capplan.evals.reasoning_replay.commands.cli import main

        code = main([name, *_argv(sub, values)], prog=PROG)
        if code == 0 and name == "run":
            next_hint(f"capplan replay report --out {values['out']}", quiet=bool(values.get("quiet")))
        if code:  # the harness's own statuses (its spec's), each a member of the enum
            raise CommandExit(ExitCode(code))

    options = [_option(a) for a in sub._actions if a.option_strings and a.dest != "help"]
    return click.Command(name, params=list(options), callback=run, help=(sub.description or short),
                         short_help=short, context_settings={"max_content_width": 100})


def _verbatim(text: str) -> str:
    """``text`` with every paragraph kept as written (click rewraps a paragraph without ``\\b``)."""
    return "\n\n".join("\b\n" + para for para in text.strip().split("\n\n") if para.strip())


def _group() -> click.Group:
    parser = _harness_parser()
    text = _verbatim(parser.description or "") + "\n\n" + _verbatim((parser.epilog or "").replace("%(prog)s", PROG))
    group = click.Group("replay", help=text,
                        short_help="Reasoning-replay consumption eval (models | run | report).",
                        context_settings={"max_content_width": 100})
    for name, sub in _subparsers(parser).items():
        group.add_command(_subcommand(name, sub, _help_of(parser, name)))
    return group


replay_cmd = _group()
