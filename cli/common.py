"""Options shared by several commands (defined once, reused as decorators).

Errors and exit codes are not handled here: every command runs inside :mod:`capplan.cli.errors`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from capplan.core.diagnostics import Diagnostic, InputError

if TYPE_CHECKING:
    from capplan.core.project_file import Project


F = TypeVar("F", bound=Callable[..., Any])

def input_options(func: F) -> F:
    """--config, --presets-file (repeatable) and --data: what a compilation reads."""
    func = click.option("--data", "data_dir", type=click.Path(path_type=Path, file_okay=False),
                        help="Folder with model_presets.yaml, providers.yaml and pricing.json to compile "
                             "against instead of the bundled ones (e.g. another data package's data/).")(func)
    func = click.option("--presets-file", "overlays", multiple=True, type=click.Path(path_type=Path),
                        help="Operator overlay file; repeatable, applied in the order given, after the "
                             "run config's engine.presets_file.")(func)
    func = click.option("--config", "run_config", type=click.Path(path_type=Path),
                        help="Run config naming the models to compile (default: the bundled catalogue).")(func)
    return func


class HttpUrl(click.ParamType):  # type: ignore[type-arg]  # generic since click 8.2; plain for older ones
    """An http(s) base URL with a host: the rule an input file's ``endpoint`` follows, but for userinfo.

    A flag may carry ``user:password@`` (the transport sends it as a Basic credential and every
    printed copy is redacted); a file may not, because plans and diffs would show it. A refused
    value is never repeated in the message.
    """

    name = "URL"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from urllib.parse import urlsplit, urlunsplit

        from capplan.core.value_types import http_url_problem

        text = str(value)
        try:
            parts = urlsplit(text)
            bare = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
        except ValueError:
            bare = text  # the rule below words what is wrong
        problem = http_url_problem(bare)
        if problem is not None:
            self.fail(f"the URL {problem}", param, ctx)
        return text


HTTP_URL = HttpUrl()


def request_options(func: F) -> F:
    """--plan PLAN, --api-base URL and the REQUEST_FILE argument (preview and send)."""
    func = click.argument("request_file", type=click.Path(dir_okay=False))(func)
    func = click.option("--api-base", default=None, type=HTTP_URL,
                        help="Send to this base URL instead of the binding's.")(func)
    func = click.option("--plan", "plan_path", required=True, type=click.Path(dir_okay=False),
                        help="Compiled plan file.")(func)
    return func


def format_option(*choices: str, default: str = "text") -> Callable[[F], F]:
    """--format with the given choices."""
    return click.option("--format", "fmt", type=click.Choice(choices), default=default, show_default=True,
                        help="Output format.")


def print_diagnostics(diagnostics: tuple[Diagnostic, ...] | list[Diagnostic]) -> None:
    """Located diagnostics, one per problem, on stderr."""
    for d in sorted(diagnostics):
        click.echo(d.render(), err=True)


# --- the project file (capplan.yaml / [tool.capplan]) ------------------------------------------

_PROJECT_KEY = "capplan.project"


def read_project(ctx: click.Context, explicit: Path | None, ignore: bool) -> None:
    """Find and load the project file for this invocation; its settings become every command's defaults.

    Called by the ``capplan`` group before the command runs (and before its ``--help``), so an
    explicit flag beats the file through click's own ``default_map``. Only the commands that take
    something from it read it (:data:`PROJECT_COMMANDS`; ``init``, ``schema`` or ``guard`` work
    in a project with a broken file). A broken project file stops them, but ``lint``, which
    reports its problems with the rest.
    """
    from capplan.core.project_lookup import PROJECT_COMMANDS, find_project_file

    ctx.meta[_PROJECT_KEY] = None
    if ctx.invoked_subcommand not in PROJECT_COMMANDS:
        return
    path = None if ignore else (explicit or find_project_file())
    if path is None:
        return
    from capplan.core.project_file import load_project, project_defaults

    shown = _shown(path)
    project, problems = load_project(path, shown)
    ctx.meta[_PROJECT_KEY] = (path, project)
    if project is None:
        if ctx.invoked_subcommand == "lint":
            ctx.default_map = {"lint": {"files": (Path(shown),)}}
            return
        raise InputError(problems)
    ctx.default_map = project_defaults(project)


def _shown(path: Path) -> str:
    import os

    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def project_file_used() -> Path | None:
    """The project file this invocation read (valid or not), or None."""
    ctx = click.get_current_context(silent=True)
    while ctx is not None and _PROJECT_KEY not in ctx.meta:
        ctx = ctx.parent
    found = ctx.meta.get(_PROJECT_KEY) if ctx is not None else None
    return found[0] if found else None


def project_in_use() -> Project | None:
    """The project file this invocation read, validated; None without one (or with ``--no-project``)."""
    ctx = click.get_current_context(silent=True)
    while ctx is not None and _PROJECT_KEY not in ctx.meta:
        ctx = ctx.parent
    found = ctx.meta.get(_PROJECT_KEY) if ctx is not None else None
    return found[1] if found else None


def project_note() -> str | None:
    """``project file: capplan.yaml (its settings are the defaults; flags override them)``, or None."""
    path = project_file_used()
    return None if path is None else f"project file: {_shown(path)} (its settings are the defaults; flags override them)"


def note_project_in_help(command: click.Command) -> None:
    """End ``command``'s help (and its subcommands') with the project file in use, or with nothing.

    The epilog is reset on every invocation, so one process running several (tests) never shows
    another's file.
    """
    from capplan.core.project_lookup import PROJECT_COMMANDS

    note = project_note()
    stack: list[tuple[click.Command, object]] = [(command, PROJECT_COMMANDS.get(command.name or ""))]
    while stack:
        cmd, reads = stack.pop()  # reads: True, or the subcommands (by name) that read the file
        original = cmd.__dict__.setdefault("_capplan_epilog", cmd.epilog)
        cmd.epilog = "\n\n".join(p for p in (original, note if reads is True else None) if p) or None
        if isinstance(cmd, click.Group):
            stack.extend((sub, isinstance(reads, dict) and reads.get(name)) for name, sub in cmd.commands.items())


def next_hint(command: str, *, quiet: bool = False) -> None:
    """``next: <command>`` on stderr: what a newcomer runs after this command.

    Shown only where someone reads it as it happens (stderr is a terminal), as the progress
    display's live line is; never in a CI log, a pipe or with ``quiet``.
    """
    if quiet or not _stderr_is_terminal():
        return
    click.echo(f"next: {command}", err=True)


def _stderr_is_terminal() -> bool:
    import sys

    return sys.stderr.isatty()
