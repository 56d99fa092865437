"""Telling a task file from the other inputs, cheaply (``capplan lint`` asks before importing any model)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def looks_like_task(data: Any) -> bool:
    """Whether a parsed YAML document is a task file (for ``capplan lint``'s auto kind)."""
    return isinstance(data, dict) and "environment" in data and "user" in data


def looks_like_task_file(path: Path) -> bool:
    """Whether the file at ``path`` is a task file, read the way task files are read (libyaml, no positions);
    False when it cannot be read (the regular lint then reports why)."""
    from capplan.core.diagnostics import InputError
    from capplan.trials.tasks.task_source import read_task_source

    try:
        return looks_like_task(read_task_source(path).data)
    except InputError:
        return False
