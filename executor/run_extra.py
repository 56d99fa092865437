"""Whether the run extra (litellm) is installed, asked only where a real provider call is about to go out.

The core install (``pip install capplan``) lints, compiles, diffs and explains without litellm;
``pip install 'capplan[run]'`` adds it for the commands that call a provider (send, trial run,
replay). A mock plan, and a client given its own completion function, never need it, so they
are never refused for lacking it.
"""

from __future__ import annotations

import importlib.util
import sys

from capplan.core.errors import ExitCode, UserError

RUN_EXTRA_INSTALL = "pip install 'capplan[run]'"

_found = False


class RunExtraMissing(UserError):
    """litellm is not installed and a call through it was asked for."""

    code = "run-extra-missing"
    exit_code = ExitCode.INPUT

    def __init__(self, command: str) -> None:
        super().__init__(f"{command} needs the run extra: {RUN_EXTRA_INSTALL}")

    def render(self) -> str:
        """One line that says what to install: nothing here is located in the user's input."""
        return self.message


def require_litellm() -> None:
    """Raise :class:`RunExtraMissing`, naming the running command, when litellm cannot be imported."""
    global _found
    if _found or "litellm" in sys.modules:
        return
    if importlib.util.find_spec("litellm") is not None:
        _found = True  # installed packages do not go away while a command runs
        return
    raise RunExtraMissing(_running_command())


def _running_command() -> str:
    """``capplan send``, ``capplan trial run``, …: the click command being run, when there is one."""
    click = sys.modules.get("click")  # the executor is a library too: only ask a command line already running
    context = click.get_current_context(silent=True) if click is not None else None
    names: list[str] = []
    while context is not None and context.parent is not None:  # the root is capplan, however it was started
        names.insert(0, str(context.info_name))
        context = context.parent
    return " ".join(["capplan", *names])
