"""Keeps credential values out of everything the harness writes or prints, with capplan's one redactor.

Every key is registered here the moment it is read, and every line bound for a file or a
terminal passes through :func:`scrub`. Providers do echo keys back in error bodies
("Incorrect API key provided: sk-…"), so scrubbing the outgoing text is the only place
where the guarantee can hold. The matching (echo forms, URL credentials, the mask) is
:class:`capplan.core.redaction.Redactor`'s; this module holds the harness's set of keys, which a
test clears between independent runs in one process.
"""

from __future__ import annotations

import threading

from capplan.core.redaction import REDACTED, Redactor

MASK = REDACTED

# Providers echo a leading or trailing slice of a long key in 401 bodies; a key this long
# has slices long enough to be redacted on their own without mangling ordinary text.
_SLICED_FROM = 24
_SLICE = 12

_lock = threading.Lock()
_redactor = Redactor()


def register(value: str) -> None:
    """Remember a credential value (and the slices providers echo) so it is never written."""
    global _redactor
    forms = [value]
    if len(value) >= _SLICED_FROM:
        forms += [value[:_SLICE], value[-_SLICE:]]
    with _lock:
        if not set(forms) <= set(_redactor.secrets):  # a key is re-read, and registered, on every call
            _redactor = _redactor.extend(forms)


def scrub(text: str) -> str:
    """``text`` with every registered credential form, and every URL credential, replaced by the mask."""
    return _redactor.text(text)


def forget_all() -> None:
    """Drop every registered value (between independent runs in one process)."""
    global _redactor
    with _lock:
        _redactor = Redactor()
