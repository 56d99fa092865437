"""``capplan diff --fail-on``: findings that get an exit status of their own, for CI to stop on.

Exit 1 means "plans differ", which is what a pull request that edits presets is for, so CI
recipes let it pass. A change of credential routing (which key a model sends where) is not
routine: with ``--fail-on credential-routing`` it exits 3 instead, after printing the diff
(``ExitCode.CREDENTIAL_ROUTING``, chosen by the command line, not here).
"""

from __future__ import annotations

from capplan.compiler.diff.model import DiffReport

#: ``--fail-on`` choices
FAIL_ON = ("credential-routing",)


def failing(report: DiffReport, fail_on: tuple[str, ...]) -> bool:
    """True when ``report`` has a finding ``fail_on`` names."""
    return "credential-routing" in fail_on and report.credential_routing_changed
