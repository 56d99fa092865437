"""A bounded memory of recent entries, shared by threads without a lock.

The executor's caches of a conversation's converted and encoded messages keep the last few
hundred entries in an ``OrderedDict``, oldest first. Each ``OrderedDict`` call is atomic under the
GIL, so threads share one without a lock; racing writers can at worst leave it a few entries (one
per racing thread) over its size.

Seam *recent-entries memo* (``ConversationCache``, ``InputItemMemo``, ``MessageListEncoder``):
a turn converts and encodes only its new messages, not the whole history again; at 300
messages encoding the history was most of what the direct transport spent on a turn
(``benchmarks/transport.py``, ``benchmarks/trial_loop.py``). In the reference mode
(:mod:`capplan.core.reference_mode`) :func:`remember` keeps nothing, so every lookup misses and
every request is converted and encoded whole.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TypeVar

from capplan.core.reference_mode import reference_mode

K = TypeVar("K")
V = TypeVar("V")


def remember(entries: OrderedDict[K, V], key: K, value: V, size: int) -> None:
    """``entries[key] = value`` as the newest entry, the oldest one dropped once ``size`` are held (nothing
    in the reference mode)."""
    if reference_mode():
        return
    if entries.pop(key, None) is None and len(entries) >= size:
        try:
            entries.popitem(last=False)
        except KeyError:  # emptied by another thread meanwhile
            pass
    entries[key] = value
