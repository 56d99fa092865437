"""capplan's log level for a block of a test."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def capplan_logs_at(level: int) -> Iterator[None]:
    """capplan's loggers at ``level`` for the block (retries and dropped parameters a test does not read)."""
    logger = logging.getLogger("capplan")
    before = logger.level
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.setLevel(before)
