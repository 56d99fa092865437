"""Located diagnostics: one record per problem, collected, rendered three ways.

Every user-facing problem is a :class:`Diagnostic`; a run collects all of them and reports
them sorted by position. :class:`InputError` carries a batch of them out of the compiler;
anything else that escapes is an internal error, not a user error.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Literal

from capplan.core.errors import UserError

Severity = Literal["error", "warning"]


@dataclass(frozen=True, order=True)
class Diagnostic:
    """One problem at one place in one file."""

    file: str
    line: int
    col: int
    code: str
    message: str
    path: str = ""
    hint: str | None = None
    severity: Severity = field(default="error")

    def render(self) -> str:
        """``file:line:col: error[CODE]: key.path: message`` and an indented ``hint:`` line."""
        where = f"{self.path}: " if self.path else ""
        text = f"{self.file}:{self.line}:{self.col}: {self.severity}[{self.code}]: {where}{self.message}"
        if self.hint:
            text += f"\n    hint: {self.hint}"
        return text

    def render_github(self) -> str:
        """A GitHub Actions workflow command that annotates the line in a pull request."""
        kind = "error" if self.severity == "error" else "warning"
        where = f"{self.path}: " if self.path else ""
        body = f"[{self.code}] {where}{self.message}" + (f" (hint: {self.hint})" if self.hint else "")
        # workflow commands end at a newline, so escape the characters GitHub reserves
        body = body.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
        file = self.file.replace("%", "%25").replace(",", "%2C").replace(":", "%3A")
        return f"::{kind} file={file},line={self.line},col={self.col},title=capplan {self.code}::{body}"

    def as_json(self) -> dict[str, object]:
        """Stable JSON record (documented in the README's lint section)."""
        return asdict(self)


class InputError(UserError):
    """Bad user input: a batch of located diagnostics. Exit code 2, never a traceback."""

    code = "INPUT"

    def __init__(self, diagnostics: Sequence[Diagnostic]) -> None:
        self.diagnostics = tuple(sorted(diagnostics))
        super().__init__("\n".join(d.render() for d in self.diagnostics))

    def render(self) -> str:
        """Every diagnostic, sorted by place, then how many errors stopped the command."""
        errors = sum(d.severity == "error" for d in self.diagnostics)
        return "\n".join([*(d.render() for d in self.diagnostics), f"capplan: {errors} error(s); nothing was written"])


def errors_only(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    """The diagnostics that stop compilation (warnings do not)."""
    return [d for d in diagnostics if d.severity == "error"]


def did_you_mean(word: str, choices: Iterable[str], *, list_max: int = 12) -> str | None:
    """A hint naming the closest valid choice, and listing all of them when there are few."""
    options = sorted(set(choices))
    import difflib  # only where a name is wrong

    close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    parts = []
    if close:
        parts.append(f"did you mean {close[0]!r}?")
    if options and len(options) <= list_max:
        parts.append("valid choices: " + ", ".join(options))
    return " ".join(parts) or None


def render_all(diagnostics: Sequence[Diagnostic], fmt: str) -> str:
    """Render for ``--format text|json|github``."""
    ordered = sorted(diagnostics)
    if fmt == "json":
        return json.dumps(
            {"version": 1, "diagnostics": [d.as_json() for d in ordered]}, indent=2, sort_keys=True
        )
    if fmt == "github":
        return "\n".join(d.render_github() for d in ordered)
    return "\n".join(d.render() for d in ordered)
