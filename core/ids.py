"""Ids that need uniqueness, not secrecy: a provider request's, a trial execution's, a gateway request's.

``uuid.uuid4()`` reads ``os.urandom`` for every id: a system call that lets go of the interpreter lock,
which with a few dozen trials in flight hands the lock to another thread and back for every request.
These ids come from one private generator seeded from the OS instead, reseeded in every forked child
so that parallel workers never share a sequence, and private so that nobody's ``random.seed()`` can
make ids repeat. Each id is a version-4 UUID, written as ``uuid4().hex`` or ``str(uuid4())`` writes one.
"""

from __future__ import annotations

import os
import random

_IDS = random.Random()
os.register_at_fork(after_in_child=_IDS.seed)
_VERSION_VARIANT_CLEAR = ~((0xF000 << 64) | (0xC000 << 48))
_VERSION_VARIANT_SET = (0x4000 << 64) | (0x8000 << 48)


def uuid4_hex() -> str:
    """A random (version 4) UUID as 32 lower-case hex digits, like ``uuid.uuid4().hex``."""
    return "%032x" % ((_IDS.getrandbits(128) & _VERSION_VARIANT_CLEAR) | _VERSION_VARIANT_SET)


def uuid4_text() -> str:
    """A random (version 4) UUID in canonical text form, like ``str(uuid.uuid4())``."""
    h = uuid4_hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
