"""The reference mode: one switch that turns every speed-only path off.

Some of capplan's code exists only to be fast: marshal copies, a hand-written canonical JSON
writer, a pooled ``http.client`` sender, a libyaml reader, a helper process that renders record
YAML, and memo caches. Each sits behind a named seam whose docstring cites the benchmark that
justifies it, and each seam has a plain side that does what DESIGN.md describes in the obvious
way (``copy.deepcopy``, ``json.dumps``, httpx, the ruamel reader, in-process rendering, no memo).

``CAPPLAN_REFERENCE=1`` selects the plain side everywhere (``pytest --reference`` sets it). The two
sides must give the same results; any difference between the modes is a bug, and the tests that
pin bytes (golden plans and wire, wire identity, trial records, BFCL agreement) run in both modes.

The variable is read once per process, on the first question, and kept: a seam may choose its
implementation when it is constructed, so the mode must not change under a live object. Nothing
asks at import time, which leaves a test runner (``tests/conftest.py``) time to set the variable
before the first question. A child process reads the variable it inherits.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any, TypeVar

from capplan.core.errors import UserError

#: the environment variable that selects the mode
VARIABLE = "CAPPLAN_REFERENCE"
#: what the variable may be set to: "1" turns the reference mode on; "0" and empty (or unset) leave it off
_ON = frozenset({"1"})
_OFF = frozenset({"", "0"})

F = TypeVar("F", bound=Callable[..., Any])


class ReferenceModeError(UserError):
    """``CAPPLAN_REFERENCE`` holds a value that names neither mode (a typo must not pick one silently)."""

    code = "REFERENCE_MODE"


def parse_switch(value: str | None) -> bool:
    """Whether ``value`` (the variable's text, None when unset) turns the reference mode on."""
    if value is None or value.strip() in _OFF:
        return False
    if value.strip() in _ON:
        return True
    raise ReferenceModeError(
        f"{VARIABLE}={value[:40]!r} is neither on nor off",
        location=VARIABLE,
        hint=f"set {VARIABLE}=1 for the reference mode, or {VARIABLE}=0 (or leave it unset) for the fast one",
    )


_decided: bool | None = None


def reference_mode() -> bool:
    """Whether this process runs in the reference mode (read from ``CAPPLAN_REFERENCE`` once, then kept)."""
    global _decided
    if _decided is None:
        _decided = parse_switch(os.environ.get(VARIABLE))
    return _decided


def decided() -> bool:
    """Whether the mode has been read already (a test runner that sets the variable checks it is not too late)."""
    return _decided is not None


def mode_name() -> str:
    """``reference`` or ``fast``: what a report header or a benchmark prints."""
    return "reference" if reference_mode() else "fast"


def speed_memo(maxsize: int) -> Callable[[F], F]:
    """``functools.lru_cache(maxsize)`` for a pure function whose cache only saves time.

    In the reference mode every call computes afresh (the mode is asked per call, as these
    decorators run at import, before a test runner may have set the variable). A cache that
    bounds work against hostile input, or that correctness needs, is a plain ``lru_cache``
    with a comment saying why, not this.
    """

    def decorate(function: F) -> F:
        cached = functools.lru_cache(maxsize=maxsize)(function)

        @functools.wraps(function)
        def call(*args: Any) -> Any:
            if _decided is False:  # the fast mode, already read: one global lookup on the hot path
                return cached(*args)
            return function(*args) if reference_mode() else cached(*args)

        call.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
        call.cache_info = cached.cache_info  # type: ignore[attr-defined]
        return call  # type: ignore[return-value]

    return decorate


__all__ = ["VARIABLE", "ReferenceModeError", "decided", "mode_name", "parse_switch", "reference_mode", "speed_memo"]
