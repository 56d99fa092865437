"""``capplan trial run``'s TASKS arguments: the expansion lives in the trial runner (the Python API uses it too)."""

from __future__ import annotations

from capplan.trials.tasks.task_paths import expand_task_paths

__all__ = ["expand_task_paths"]
