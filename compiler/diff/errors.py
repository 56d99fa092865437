"""The user errors of ``capplan diff``: bad files, tampered plans, unknown checkers, git trouble.

All of them end the command with exit code 2 and a message; none is a traceback.
"""

from __future__ import annotations

from capplan.core.diagnostics import Diagnostic


class DiffInputError(Exception):
    """Input that cannot be diffed; the message says what and where."""


class TamperedPlanError(DiffInputError):
    """A plan whose fingerprint does not match its body: it was edited after compilation."""


class PlanShapeError(DiffInputError):
    """Two plans of different ``plan_version`` whose shapes cannot be compared field by field."""


class SideCompileError(DiffInputError):
    """One side of ``diff --base`` does not compile; carries the located diagnostics."""

    def __init__(self, side: str, diagnostics: tuple[Diagnostic, ...]) -> None:
        self.side = side
        self.diagnostics = diagnostics
        super().__init__(f"{side} does not compile")
