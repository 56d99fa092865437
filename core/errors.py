"""The one base of every error a user is meant to read: a code, a message and, where known, a place.

The command line maps exactly these to located messages and exit codes (``capplan.cli.errors``);
any other exception reaching it is a bug in capplan, reported as one. A subclass sets ``code``
(the ``error[CODE]`` a message shows) and ``exit_code`` (2 for bad input, the default; 1 for a run
that failed for a reason outside the input, such as a provider refusing the call).
"""

from __future__ import annotations

#: what an error with no place of its own is located at: the program
PROGRAM = "capplan"


class UserError(Exception):
    """An error whose message is for the user: what is wrong, where, and how to fix it."""

    #: what ``error[CODE]`` shows; every subclass names its own (a test walks them)
    code: str = "ERROR"
    #: the process exit status this error ends a command with
    exit_code: int = 2

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
