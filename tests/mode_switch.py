"""This process in the reference mode or the fast one, for the length of a block, as if ``CAPPLAN_REFERENCE`` said so.

For tests that compare a seam's two sides in one process (the variable is read once per process).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from capplan.core import reference_mode as switch


@contextmanager
def mode(on: bool) -> Iterator[None]:
    """The reference mode (``on``) or the fast one while the block runs; the decision before it comes back."""
    saved = switch._decided
    switch._decided = on
    try:
        yield
    finally:
        switch._decided = saved
