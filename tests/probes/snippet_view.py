"""The one place the probe tests read an overlay snippet's shape.

A snippet holds ``param_value_rules`` entries; where in the overlay they sit (a ``providers:``
block today, a route-scoped block later) is the snippet writer's business. The lane tests assert
on which rules a snippet holds and what their evidence says, through :func:`snippet_rules`, so a
change of the block around them is one edit here, not one per test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

#: how deep a snippet's rules may sit; a snippet is small, so deeper is a broken writer
MAX_DEPTH = 12


def snippet_rules(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """``(param, value key) -> rule`` for every ``param_value_rules`` entry anywhere in the snippet."""
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    found: dict[tuple[str, str], dict[str, Any]] = {}
    _walk(document, found, 0)
    return found


def _walk(node: Any, found: dict[tuple[str, str], dict[str, Any]], depth: int) -> None:
    assert depth <= MAX_DEPTH, "a snippet nested deeper than any overlay block"
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "param_value_rules" and isinstance(value, dict):
                for param, rules in value.items():
                    for value_key, rule in (rules or {}).items():
                        found[(str(param), _key(value_key))] = rule
            else:
                _walk(value, found, depth + 1)
    elif isinstance(node, list):
        for item in node:
            _walk(item, found, depth + 1)


def _key(value: Any) -> str:
    # YAML reads `0.0:` as a float and `true:` as a boolean: give them back as param_value_rules keys them
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
