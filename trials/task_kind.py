"""Telling a task file from the other inputs, cheaply (``capplan lint`` asks before importing any model)."""

from __future__ import annotations

from typing import Any


def looks_like_task(data: Any) -> bool:
    """Whether a parsed YAML document is a task file (for ``capplan lint``'s auto kind)."""
    return isinstance(data, dict) and "environment" in data and "user" in data
