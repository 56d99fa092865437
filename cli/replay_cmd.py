"""``capplan replay``: the reasoning-replay consumption eval (evals/reasoning_replay).

The harness parses its own arguments, so click passes everything after ``replay`` through
unchanged; ``capplan replay run …`` and ``python evals/reasoning_replay/harness.py run …``
are the same command.
"""

from __future__ import annotations

import click


@click.command(
    "replay",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True,
                      "help_option_names": []},
    add_help_option=False,
)
@click.pass_context
def replay_cmd(ctx: click.Context) -> None:
    """Reasoning-replay consumption eval: models | run | report (see `capplan replay --help`)."""
    from capplan.evals.reasoning_replay.commands.cli import main

    ctx.exit(main(list(ctx.args), prog="capplan replay"))
