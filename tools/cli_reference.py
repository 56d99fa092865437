"""Write docs/cli.md, the command-line reference, from the ``--help`` of every ``capplan`` command.

    python tools/cli_reference.py            # rewrites docs/cli.md
    python tools/cli_reference.py --check    # exit 1 when docs/cli.md differs from the --help texts

The page is generated, never edited by hand: the ``--help`` texts are the one source, and a test
(tests/docs/test_cli_reference.py) fails when the page is stale, naming the command above.
Help is rendered at a fixed width so the page does not depend on the terminal it is made in.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import click

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "docs" / "cli.md"
REGENERATE = "python tools/cli_reference.py"
WIDTH = 100

HEADER = f"""# Command-line reference

Every `capplan` command and subcommand, exactly as its `--help` prints it. This page is
generated from the `--help` texts by `{REGENERATE}`; do not edit it by hand (a test fails when
it is stale). Exit codes everywhere: **0** ok, **1** findings or differences, **2** usage or
input error, **130** interrupted. Errors are located, one line per problem, with a hint where
there is a fix:

```
ops.yaml:4:5: error[unknown-key]: presets.mine.schema_sanitiser: unknown key 'schema_sanitiser'
    hint: did you mean 'schema_sanitizer'?
```

`capplan lint`, `compile`, `explain`, `diff`, `schema` and `policies` never import litellm, so they
start fast.
"""


def _walk(command: click.Command, ctx: click.Context) -> Iterator[tuple[click.Command, click.Context]]:
    """``command`` and then every subcommand below it, depth first, in the order ``--help`` lists them."""
    yield command, ctx
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is None or sub.hidden:
                continue
            yield from _walk(sub, _context(sub, name, ctx))


def _context(command: click.Command, name: str, parent: click.Context | None) -> click.Context:
    """What click builds for ``command`` on the command line (its own context settings, such as
    ``-h`` beside ``--help``), at the page's fixed width."""
    settings = {**command.context_settings, "terminal_width": WIDTH, "max_content_width": WIDTH}
    return click.Context(command, info_name=name, parent=parent, **settings)


def render() -> str:
    """The whole page, from the installed ``capplan.cli:main`` group."""
    from capplan.cli import main

    sections = [HEADER]
    for command, ctx in _walk(main, _context(main, "capplan", None)):
        if _passes_arguments_through(command, ctx):
            for path, text in _argparse_helps(main, ctx.command_path.split()[1:]):
                sections.append(_section(path, text))
        else:
            sections.append(_section(ctx.command_path, command.get_help(ctx)))
    return "\n".join(sections)


def _section(command_path: str, help_text: str) -> str:
    return f"## `{command_path}`\n\n```text\n{help_text.rstrip()}\n```\n"


def _passes_arguments_through(command: click.Command, ctx: click.Context) -> bool:
    """A command that hands its whole command line to a parser of its own (``capplan replay`` runs
    the replay harness's argparse parser): its help is that parser's, not click's."""
    return not isinstance(command, click.Group) and not command.add_help_option and ctx.allow_extra_args


def _argparse_helps(main: click.Command, words: list[str]) -> Iterator[tuple[str, str]]:
    """``capplan WORDS --help`` and the ``--help`` of each subcommand its usage line lists
    (argparse writes them as ``{a,b,c}``), run through the real command at the page's width."""
    from click.testing import CliRunner

    def help_of(args: list[str]) -> str:
        done = CliRunner().invoke(main, [*args, "--help"], env={"COLUMNS": str(WIDTH)})
        if done.exit_code != 0:
            raise RuntimeError(f"`capplan {' '.join(args)} --help` exited {done.exit_code}:\n{done.output}")
        return done.output

    top = help_of(words)
    yield "capplan " + " ".join(words), top
    usage = top.split("\n\n", 1)[0]
    if (choices := re.search(r"\{([\w,-]+)\}", usage)) is not None:
        for name in choices.group(1).split(","):
            yield "capplan " + " ".join([*words, name]), help_of([*words, name])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/cli.md is stale; write nothing")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
        if current != text:
            print(f"{PAGE.relative_to(REPO)} is stale; regenerate it with `{REGENERATE}`", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
