"""The user-facing error classes: each prints as one line and maps to an exit code."""

from __future__ import annotations


class HarnessError(Exception):
    """A problem the user can act on. Printed as ``error: <message>``, never a traceback."""

    exit_code = 2


class UsageError(HarnessError):
    """Bad arguments or a bad output folder: nothing was sent."""


class MissingCredential(HarnessError):
    """A key the route needs is not where it should be. The message names the place, never a value."""


class BudgetExhausted(HarnessError):
    """The next call could push the spend of this output folder past ``--budget``."""

    exit_code = 1
