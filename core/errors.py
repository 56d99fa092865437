"""The one base of every error a user is meant to read: a code, a message and, where known, a place.

The command line maps exactly these to located messages and exit codes (``capplan.cli.errors``);
any other exception reaching it is a bug in capplan, reported as one. A subclass sets ``code``
(the ``error[CODE]`` a message shows) and ``exit_code`` (2 for bad input, the default; 1 for a run
that failed for a reason outside the input, such as a provider refusing the call).

:class:`ExitCode` is every exit status capplan ends with. It lives here, at the bottom layer, so
that an error class of any layer names its status from the same enum the command line maps.
"""

from __future__ import annotations

from enum import IntEnum

#: what an error with no place of its own is located at: the program
PROGRAM = "capplan"


class ExitCode(IntEnum):
    """Every exit status a ``capplan`` command ends with; only ``capplan.cli.errors`` turns one into an exit."""

    #: done, nothing found
    OK = 0
    #: findings or differences (lint warnings, plans that differ, stale golden files or schemas, a trial
    #: run with trials that have no outcome), or a run that failed for a reason outside the input
    FINDINGS = 1
    #: usage or input error (click's own usage errors exit 2 too)
    INPUT = 2
    #: ``capplan diff --fail-on credential-routing``: a change of which key a model sends where
    CREDENTIAL_ROUTING = 3
    #: the reasoning-replay harness's "internal error" (its spec's status; ``capplan replay`` passes it on)
    INTERNAL_ERROR = 3
    #: the shell convention for "ended by SIGINT"
    INTERRUPTED = 130


class UserError(Exception):
    """An error whose message is for the user: what is wrong, where, and how to fix it."""

    #: what ``error[CODE]`` shows; every subclass names its own (a test walks them)
    code: str = "ERROR"
    #: the process exit status this error ends a command with
    exit_code: ExitCode = ExitCode.INPUT

    def __init__(self, message: str, *, location: str | None = None, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        #: ``path``, ``path:line`` or ``path:line:col`` when the error has a place
        self.location = location
        self.hint = hint

    def render(self) -> str:
        """``location: error[CODE]: message`` (and ``hint: …`` on the next line), as lint prints.

        Without a place the program stands in for one (``capplan: error[CODE]: …``); the command
        line places such an error at the command that raised it. Further lines of a message
        (an indented command to run, say) follow as they are.
        """
        text = f"{self.location or PROGRAM}: error[{self.code}]: {self.message}"
        return f"{text}\n    hint: {self.hint}" if self.hint else text
