"""The named checkers of ``capplan diff``, and ``--checks`` / ``--ignore`` selection.

Every plan field except ``plan_version`` (reported per model), ``provenance`` (used to name
the layer of a change) and ``fingerprint`` (follows from the rest) is owned by exactly one
checker; a test keeps it so.
"""

from __future__ import annotations

from collections.abc import Iterable

from capplan.core.diagnostics import did_you_mean
from capplan.compiler.diff.checkers import (
    allowed_params,
    binding,
    defaults,
    inputs,
    loop,
    params,
    policies,
    preset,
    pricing,
    routing,
    value_rules,
)
from capplan.compiler.diff.checkers.base import Checker
from capplan.compiler.diff.errors import DiffInputError

#: name -> checker, in report order
CHECKERS: dict[str, Checker] = {
    c.name: c
    for c in (
        preset.CHECKER,
        policies.CHECKER,
        params.CHECKER,
        value_rules.CHECKER,
        allowed_params.CHECKER,
        binding.CHECKER,
        routing.CHECKER,
        loop.CHECKER,
        pricing.CHECKER,
        defaults.CHECKER,
        inputs.CHECKER,
    )
}

#: plan fields no checker owns, and why
UNCHECKED_FIELDS: dict[str, str] = {
    "plan_version": "reported per model as a version change",
    "provenance": "names the layer of each change; where a value came from is not itself a change",
    "fingerprint": "a hash of everything else",
}


def select_checkers(checks: Iterable[str] | None, ignore: Iterable[str] = ()) -> list[Checker]:
    """``--checks`` (default: all) minus ``--ignore``, in report order; unknown names are errors."""
    chosen = list(CHECKERS) if checks is None else _known(checks, "--checks")
    dropped = set(_known(ignore, "--ignore"))
    selected = [CHECKERS[n] for n in CHECKERS if n in chosen and n not in dropped]
    if not selected:
        raise DiffInputError("no checks left to run after --checks / --ignore; valid checks: " + ", ".join(CHECKERS))
    return selected


def _known(names: Iterable[str], option: str) -> list[str]:
    out = []
    for name in names:
        if name not in CHECKERS:
            hint = did_you_mean(name, CHECKERS)
            raise DiffInputError(f"{option}: unknown check {name!r}" + (f"; {hint}" if hint else ""))
        out.append(name)
    return out


def parse_names(value: str | None) -> list[str] | None:
    """``"a, b"`` → ``["a", "b"]``; None stays None (the option was not given)."""
    if value is None:
        return None
    return [n.strip() for n in value.split(",") if n.strip()]


__all__ = ["CHECKERS", "UNCHECKED_FIELDS", "Checker", "parse_names", "select_checkers"]
