"""Reading a task file fast: the one fast reader of :mod:`capplan.core.yaml_fast`, under the names
the task loader uses.

Task packs are large (a benchmark's 200 files of ~30 KB each) and are read on every run: libyaml
gives the data, the position-recording careful reader (:mod:`capplan.core.yaml_source`) runs only
where the two readers could differ or when a diagnostic asks for a position. A test holds that both
readers give the same data for the example task packs and for every scalar form.
"""

from __future__ import annotations

from pathlib import Path

from capplan.core.yaml_fast import LazySource, fast_data, fast_source_from_bytes, read_fast_source
from capplan.core.yaml_source import SourceFile


def read_task_source(path: Path, display: str | None = None) -> SourceFile:
    """``path`` parsed; every problem is the careful reader's located :class:`InputError`."""
    return read_fast_source(path, display)


def task_source_from_bytes(raw: bytes, name: str) -> SourceFile:
    """Content already in memory (a task carried in a trial spec), parsed the same way."""
    return fast_source_from_bytes(raw, name)


__all__ = ["LazySource", "fast_data", "read_task_source", "task_source_from_bytes"]
