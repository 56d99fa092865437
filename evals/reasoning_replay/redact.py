"""Keeps credential values out of everything the harness writes or prints.

Every key is registered here the moment it is read, and every line bound for a file or a
terminal passes through :func:`scrub`. Providers do echo keys back in error bodies
("Incorrect API key provided: sk-…"), so scrubbing the outgoing text is the only place
where the guarantee can hold.
"""

from __future__ import annotations

import json
import threading

MASK = "[redacted]"
_lock = threading.Lock()
_secrets: set[str] = set()


def register(value: str) -> None:
    """Remember a credential value (and the fragments providers echo) so it is never written."""
    if len(value) < 6:
        return  # too short to scrub without mangling ordinary text; real keys are long
    forms = {value, json.dumps(value)[1:-1]}
    if len(value) >= 24:
        # Providers echo a leading or trailing slice of a key in 401 bodies.
        forms |= {value[:12], value[-12:]}
    with _lock:
        _secrets.update(forms)


def scrub(text: str) -> str:
    """``text`` with every registered credential form replaced by ``[redacted]``."""
    with _lock:
        forms = sorted(_secrets, key=len, reverse=True)
    for form in forms:
        if form in text:
            text = text.replace(form, MASK)
    return text


def forget_all() -> None:
    """Drop every registered value (between independent runs in one process)."""
    with _lock:
        _secrets.clear()
