"""The one place the command line turns an exception into what the user reads and an exit status.

Every command runs inside :func:`errors_reported` (the ``capplan`` group invokes its
subcommands through it):

- a :class:`~capplan.core.errors.UserError` prints its own :meth:`render` (an
  :class:`~capplan.core.diagnostics.InputError`: its located diagnostics, sorted, and the
  "N error(s); nothing was written" line) on stderr, through the redactor, and ends the command
  with the error's ``exit_code``; one with no place of its own is placed at the command
  (``capplan gateway check: error[GATEWAY]: …``);
- Ctrl-C that a command does not handle itself ends it with one line and exit status 130, at
  once: threads still running then (trials a second Ctrl-C left in their provider calls) are
  not waited for;
- a command that has printed its own outcome and ends with a status other than 0 (lint's
  warnings-only 1 or errors 2, diff's 1 "plans differ" and 3, stale golden files, a trial run's
  outcome) raises :class:`CommandExit` carrying that status; it ends the command with it and
  prints nothing more;
- click's own usage errors and exits pass through untouched (click prints them, exit 2);
- anything else is a bug in capplan: one line saying so, then the traceback.

Every status is a member of :class:`~capplan.core.errors.ExitCode`; no command module calls
``sys.exit`` (a test reads them to hold this).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterator

import click

from capplan.core.errors import PROGRAM, ExitCode, UserError

__all__ = ["BUG_MESSAGE", "CommandExit", "ExitCode", "errors_reported", "exit_without_waiting", "render_user_error"]

BUG_MESSAGE = (f"{PROGRAM}: internal error: this is a bug in capplan, not a problem with your input; "
               "please report it with the traceback below")


class CommandExit(Exception):
    """A command's end with ``status`` after it printed what it had to say: findings, not an error.

    An ``Exception`` rather than ``SystemExit`` so that only :func:`errors_reported` turns it into
    the process's exit status: a command invoked any other way (a test calling its function) sees
    it raised, not the end of its process.
    """

    def __init__(self, status: ExitCode) -> None:
        super().__init__(f"exit {int(status)} ({status.name})")
        self.status = status


def exit_without_waiting(code: int) -> None:
    """End the process now when live threads would hold the interpreter's exit (it joins them first).

    Ctrl-C means now: what had to be recorded was recorded before the interrupt reached here.
    Only the console script calls this (:func:`capplan.cli.run`): a command invoked in-process
    (a test's ``CliRunner``, a notebook) must never end its host process.
    """
    main = threading.main_thread()
    if any(t is not main and t.is_alive() and not t.daemon for t in threading.enumerate()):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def render_user_error(exc: UserError) -> str:
    """What the user reads for ``exc``: its rendered lines, every credential in play masked."""
    from capplan.core.redaction import redact_text

    return redact_text(exc.render())


@contextlib.contextmanager
def errors_reported(command: Callable[[], str] = lambda: PROGRAM) -> Iterator[None]:
    """Run a command; map what escapes it to a message on stderr and an exit status.

    ``command`` names the command that ran (asked only when an error needs a place).
    """
    try:
        yield
    except UserError as exc:
        if exc.location is None:
            exc.location = command()
        click.echo(render_user_error(exc), err=True)
        sys.exit(int(exc.exit_code))
    except CommandExit as done:
        sys.exit(int(done.status))
    except KeyboardInterrupt:
        click.echo(f"\n{PROGRAM}: interrupted", err=True)
        sys.exit(int(ExitCode.INTERRUPTED))
    except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
        raise
    except Exception:
        click.echo(BUG_MESSAGE, err=True)
        raise
