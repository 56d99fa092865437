"""Default factories for pydantic fields: functions of ours, not the ``dict`` and ``list`` builtins.

pydantic reads a default factory's signature when it builds a validator, to learn whether the
factory takes the data validated so far. A builtin has no code object, so :mod:`inspect` parses
its text signature with :mod:`tokenize`, whose first use compiles a large regex: about 10 ms of
every ``capplan lint`` and ``capplan compile`` on the machine ``benchmarks/compiler_speed.py``
reports from. A Python function's signature is read from its code object. The values are the
same; ``tests/compiler/test_default_factories.py`` holds every model to this.
"""

from __future__ import annotations

from typing import Any


def empty_dict() -> dict[Any, Any]:
    """A new empty dict, as ``dict()`` gives."""
    return {}


def empty_list() -> list[Any]:
    """A new empty list, as ``list()`` gives."""
    return []
