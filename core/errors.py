"""The one base of every error a user is meant to read: a code, a message and, where known, a place.

The command line maps exactly these to located messages and exit codes (``capplan.cli``); any
other exception reaching it is a bug in capplan, reported as one. A subclass sets ``code`` (the
``error[CODE]`` a message shows) and ``exit_code`` (2 for bad input, the default; 1 for a run that
failed for a reason outside the input, such as a refused key).
"""

from __future__ import annotations


class UserError(Exception):
    """An error whose message is for the user: what is wrong, where, and how to fix it."""

    #: what ``error[CODE]`` shows; subclasses name their own
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
        """``location: error[CODE]: message`` (and ``hint: …`` on the next line), as lint prints."""
        head = f"{self.location}: " if self.location else ""
        text = f"{head}error[{self.code}]: {self.message}"
        return f"{text}\n  hint: {self.hint}" if self.hint else text
