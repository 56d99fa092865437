"""Importing a command module pauses the cyclic collector, and leaves it as it found it."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap

import click

from capplan.cli import COMMANDS, main


def test_the_collector_runs_again_for_the_command_itself() -> None:
    # in a fresh interpreter, so that the command module is imported here, not by an earlier test
    script = textwrap.dedent("""
        import gc, sys
        import click
        from capplan.cli import main
        ctx = click.Context(main)
        assert gc.isenabled()
        before = gc.get_freeze_count()
        command = main.get_command(ctx, "lint")
        assert "capplan.cli.lint_cmd" in sys.modules and command.name == "lint"
        assert gc.isenabled(), "the collector stays off after the import"
        assert gc.get_freeze_count() > before, "the import-time objects were not exempted"
        gc.disable()
        main.get_command(ctx, "compile")
        assert not gc.isenabled(), "a collector the caller turned off was turned on"
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_a_command_already_imported_is_returned_without_pausing_anything() -> None:
    ctx = click.Context(main)
    first = main.get_command(ctx, "lint")
    frozen = gc.get_freeze_count()
    assert main.get_command(ctx, "lint") is first
    assert gc.get_freeze_count() == frozen and gc.isenabled()


def test_every_command_is_found() -> None:
    ctx = click.Context(main)
    assert main.list_commands(ctx) == sorted(COMMANDS)
    for name in COMMANDS:
        command = main.get_command(ctx, name)
        assert isinstance(command, click.Command) and command.name == name
