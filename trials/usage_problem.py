"""The refusal of a ``capplan trial`` command-line combination that cannot run.

It lives below the driver, the backends and the cluster alike, since each of them refuses such a
combination; kept here, none of them has to import another to name it.
"""

from __future__ import annotations

from capplan.core.errors import UserError


class UsageProblem(UserError):
    """A command-line combination that cannot run (exit 2)."""

    code = "USAGE"
