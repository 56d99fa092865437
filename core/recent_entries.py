"""A bounded memory of recent entries, shared by threads without a lock.

The executor's caches of a conversation's converted and encoded messages keep the last few
hundred entries in an ``OrderedDict``, oldest first. Each ``OrderedDict`` call is atomic under the
GIL, so threads share one without a lock; racing writers can at worst leave it a few entries (one
per racing thread) over its size.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")


def remember(entries: OrderedDict[K, V], key: K, value: V, size: int) -> None:
    """``entries[key] = value`` as the newest entry, the oldest one dropped once ``size`` are held."""
    if entries.pop(key, None) is None and len(entries) >= size:
        try:
            entries.popitem(last=False)
        except KeyError:  # emptied by another thread meanwhile
            pass
    entries[key] = value
