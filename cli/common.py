"""Options shared by several commands (defined once, reused as decorators) and their exit codes.

Errors are not handled here: every command runs inside :mod:`capplan.cli.errors`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from capplan.core.diagnostics import Diagnostic

F = TypeVar("F", bound=Callable[..., Any])

EXIT_OK, EXIT_FINDINGS, EXIT_INPUT = 0, 1, 2


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


def request_options(func: F) -> F:
    """--plan PLAN, --api-base URL and the REQUEST_FILE argument (preview and send)."""
    func = click.argument("request_file", type=click.Path(dir_okay=False))(func)
    func = click.option("--api-base", default=None, help="Send to this base URL instead of the binding's.")(func)
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
