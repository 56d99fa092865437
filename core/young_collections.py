"""The cyclic garbage collector's young generation spaced out while trials run (a speed-only seam).

Used by the driver around a drive, and by each worker process of ``trial run --workers`` around its
trials: the same CPU is saved wherever the trials run.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

from capplan.core.reference_mode import reference_mode

#: How many new container objects the young generation holds before it is collected while trials
#: run (CPython's default is 700).
YOUNG_COLLECTION_THRESHOLD = 10_000


@contextlib.contextmanager
def young_collections_spaced() -> Iterator[None]:
    """The cyclic collector's young generation collected every 10 000 allocations, not 700, for a drive.

    A running trial allocates tens of thousands of short-lived containers per turn (requests,
    parsed responses, records), almost all freed by reference counting; at the default threshold
    the collector walks the young ones every 700 of them to find nothing, and each tenth walk
    climbs into the older generations: a tenth of a concurrent run's CPU, under the one GIL the
    trials share. At 10 000 the walks are a fourteenth as many and the garbage they do find waits
    a little longer. The previous setting comes back when the drive ends; a threshold someone set
    higher (or 0, collection off) is left as it is, and the reference mode leaves CPython's.
    """
    previous = gc.get_threshold()
    if previous[0] == 0 or previous[0] >= YOUNG_COLLECTION_THRESHOLD or reference_mode():
        yield
        return
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, *previous[1:])
    try:
        yield
    finally:
        if gc.get_threshold()[0] == YOUNG_COLLECTION_THRESHOLD:  # unless the caller changed it meanwhile
            gc.set_threshold(*previous)
