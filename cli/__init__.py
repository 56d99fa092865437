"""The ``capplan`` command line.

Each command lives in its own module and is imported only when invoked, so ``capplan lint``
never pays for what ``capplan send`` needs (litellm takes ~11 s to import).
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

# command name -> "module:attribute" of its click command
COMMANDS: dict[str, str] = {
    "compile": "capplan.cli.compile_cmd:compile_cmd",
    "lint": "capplan.cli.lint_cmd:lint_cmd",
    "explain": "capplan.cli.explain_cmd:explain_cmd",
    "schema": "capplan.cli.schema_cmd:schema_cmd",
    "policies": "capplan.cli.policies_cmd:policies_cmd",
    "diff": "capplan.cli.diff_cmd:diff_cmd",
    "preview": "capplan.cli.preview_cmd:preview_cmd",
    "send": "capplan.cli.send_cmd:send_cmd",
    "guard": "capplan.cli.guard_cmd:guard_cmd",
    "replay": "capplan.cli.replay_cmd:replay_cmd",
    "gateway": "capplan.cli.gateway_cmd:gateway_cmd",
    "trial": "capplan.cli.trial_cmd:trial_cmd",
    "init": "capplan.cli.init_cmd:init_cmd",
    "conformance": "capplan.cli.conformance_cmd:conformance_cmd",
    "probe": "capplan.cli.probe_cmd:probe_cmd",
}

#: commands that hold nothing open once they return (they read files, write through atomic
#: replaces and join their own threads), so their process may end without interpreter teardown
QUICK_EXIT: frozenset[str] = frozenset({"compile", "lint", "explain", "schema", "policies", "diff"})

# one-line help shown by `capplan --help` without importing the command modules
SHORT_HELP: dict[str, str] = {
    "compile": "Compile model configuration into fingerprinted plan files.",
    "lint": "Check preset / overlay / run-config files; report every problem, located.",
    "explain": "Show which layer, file and line set each field of a model's plan.",
    "schema": "Write or print the JSON Schemas of every input format and the plan.",
    "policies": "List every registered policy by slot, with its parameters and docs.",
    "diff": "Semantic diff of two plans or plan folders (or against a git revision).",
    "preview": "Print the exact litellm kwargs a plan builds for a request file.",
    "send": "Send a request file through a plan and print the parsed result.",
    "guard": "Audit user-simulator replies offline with the reply guard.",
    "replay": "Reasoning-replay consumption eval (models | run | report).",
    "gateway": "Check how each plan routes through the LLM gateway (LLM_PROXY_*).",
    "trial": "Run agent tasks from compiled plans, compare and view the results (run | report | view | import).",
    "init": "Write a commented starter project (capplan.yaml, run config, overlay, one task).",
    "conformance": "Hold plans to the rules providers enforce, offline: a plan x rule matrix.",
    "probe": "Ask a plan's live route which values it takes; write dated evidence and an overlay snippet.",
}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(n for n in COMMANDS if _module_exists(COMMANDS[n]))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None or not _module_exists(target):
            return None
        module_name, attr = target.split(":")
        if module_name in sys.modules:
            command: click.Command = getattr(sys.modules[module_name], attr)
            return command
        with _collector_paused_for_imports():
            # before the command's models are built: pydantic looks its plugins up on the first one
            from capplan.core.pydantic_plugins import answer_pydantic_plugin_lookup

            answer_pydantic_plugin_lookup()
            command = getattr(importlib.import_module(module_name), attr)
        return command

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # kept so that an error with no place of its own can be placed at the command that raised it
        ctx.meta["capplan.args"] = tuple(args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        # the one place an exception becomes a message and an exit status (capplan.cli.errors)
        from capplan.cli.errors import errors_reported
        from capplan.core.entry_points import POLICY_GROUP, one_pass_for
        from capplan.core.pydantic_plugins import PYDANTIC_GROUP

        # pydantic's plugins and capplan's policies: what is installed, read once per command
        with errors_reported(lambda: _command_path(ctx)), one_pass_for(frozenset({PYDANTIC_GROUP, POLICY_GROUP})):
            return super().invoke(ctx)

    def format_commands(self, ctx: click.Context, formatter: Any) -> None:
        rows = [(name, SHORT_HELP.get(name, "")) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def _command_path(ctx: click.Context) -> str:
    """``capplan gateway check``: the group's name and the (sub)command words it was invoked with."""
    words = ["capplan"]  # the console script's name, whatever a test runner calls the group
    command: click.Command = ctx.command
    for word in ctx.meta.get("capplan.args", ()):
        if not isinstance(command, click.Group) or word.startswith("-"):
            break
        found = command.get_command(ctx, word)
        if found is None:
            break
        words.append(word)
        command = found
    return " ".join(words)


@contextlib.contextmanager
def _collector_paused_for_imports() -> Iterator[None]:
    """Import a command module with the cyclic garbage collector paused, then exempt what it built.

    Importing a command builds tens of thousands of long-lived objects (modules, classes, pydantic
    models and their schemas), and each 700 allocations the collector walks the young ones, and
    now and then all of them, to find no garbage: about a tenth of ``capplan compile``'s CPU time.
    Afterwards ``gc.freeze()`` moves everything alive into the permanent generation, so the
    collections the command itself triggers (it runs with the collector on, so a long trial run
    reclaims its cycles as usual) do not walk the import-time objects again. The cost is that
    cyclic garbage made during the import itself is never reclaimed; imports make little of it.
    Only the first import of a command module pauses anything; later lookups return early.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


def _module_exists(target: str) -> bool:
    return importlib.util.find_spec(target.split(":")[0]) is not None


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="capplan")
@click.option("--project", "project_file", type=click.Path(path_type=Path, dir_okay=False, exists=True), default=None,
              help="Project file to read instead of the nearest capplan.yaml (or pyproject.toml with [tool.capplan]).")
@click.option("--no-project", is_flag=True, default=False, help="Read no project file; only the flags given count.")
@click.pass_context
def main(ctx: click.Context, project_file: Path | None, no_project: bool) -> None:
    """capplan: compile every provider and model quirk into a frozen capability plan.

    \b
    Typical use:
      capplan init my-evals                 # a starter project that lints and runs offline
      capplan compile --out plans/          # the bundled catalogue, one plan per model
      capplan lint examples/overlays/*.yaml # every problem in every file, located
      capplan explain kimi-k3 policies.message_assembly_policy
      capplan diff --base origin/main       # what a change does to every plan

    A project file (capplan.yaml at the project root, found from the working directory up to
    the git root; or [tool.capplan] in pyproject.toml) names the run config, overlays, data,
    plans and golden folders and trial defaults, so commands need no repeated flags; a flag
    given beats it. Shell completion: see docs/commands.md (eval "$(_CAPPLAN_COMPLETE=bash_source capplan)").

    Exit codes: 0 ok, 1 findings or differences, 2 usage or input error.
    """
    from capplan.cli.common import note_project_in_help, read_project

    if ctx.resilient_parsing:  # shell completion: read nothing, fail on nothing
        return
    read_project(ctx, project_file, no_project)
    name = ctx.invoked_subcommand
    command = self_command = ctx.command
    if name is not None and isinstance(self_command, click.Group):
        found = self_command.get_command(ctx, name)
        if found is not None:
            command = found
    note_project_in_help(command)


def run() -> None:
    """The ``capplan`` console script: :func:`main`, and for short commands an exit without teardown.

    Tearing the interpreter down (every module, class and pydantic schema freed one by one) was
    about a twelfth of ``capplan compile``'s CPU time, and a command that has finished needs none
    of it. After a command of :data:`QUICK_EXIT`, while no other thread runs, the exit handlers
    run (``atexit``), the standard streams are flushed and the process ends with the same status
    through ``os._exit``. Any other command, or a thread still alive, gets the ordinary exit.
    ``python -m capplan.cli`` runs this too.
    """
    from capplan.core.errors import ExitCode  # small; capplan.cli.errors is imported only when it is needed

    try:
        main()
    except SystemExit as done:
        if done.code == ExitCode.INTERRUPTED:
            from capplan.cli.errors import exit_without_waiting

            exit_without_waiting(ExitCode.INTERRUPTED)  # a hung tool or a call in flight must not hold Ctrl-C
        if len(sys.argv) > 1 and sys.argv[1] in QUICK_EXIT and _only_main_thread():
            _exit_now(done.code)
        raise


def _only_main_thread() -> bool:
    threading = sys.modules.get("threading")
    return threading is None or threading.active_count() == 1


def _exit_now(code: object) -> None:
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # what SystemExit does with a message: print it, exit 1
        print(code, file=sys.stderr)
        status = 1
    import atexit

    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        status = 120  # Python's own exit status when flushing the standard streams fails
    os._exit(status)
