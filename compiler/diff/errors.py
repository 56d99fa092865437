"""The user errors of ``capplan diff``: bad files, tampered plans, unknown checkers, git trouble.

All of them end the command with exit code 2 and a message (printed by ``capplan.cli.errors``);
none is a traceback. A message names its own file where it has one, so the error is placed at
the command (``capplan diff: error[DIFF]: old.json: no such file``).
"""

from __future__ import annotations

from capplan.core.diagnostics import Diagnostic
from capplan.core.errors import UserError

#: where a diff error with no place of its own is shown
COMMAND = "capplan diff"


class DiffInputError(UserError):
    """Input that cannot be diffed; the message says what and where."""

    code = "DIFF"


class TamperedPlanError(DiffInputError):
    """A plan whose fingerprint does not match its body: it was edited after compilation."""

    code = "TAMPERED_PLAN"


class PlanShapeError(DiffInputError):
    """Two plans of different ``plan_version`` whose shapes cannot be compared field by field."""

    code = "PLAN_SHAPE"


class SideCompileError(DiffInputError):
    """One side of ``diff --base`` does not compile; carries the located diagnostics."""

    code = "SIDE_COMPILE"

    def __init__(self, side: str, diagnostics: tuple[Diagnostic, ...]) -> None:
        self.side = side
        self.diagnostics = diagnostics
        super().__init__(f"{side} does not compile")

    def render(self) -> str:
        """Which side does not compile, then its located diagnostics (they carry their own codes)."""
        return "\n".join([f"{self.location or COMMAND}: {self.message}:", *(d.render() for d in sorted(self.diagnostics))])
