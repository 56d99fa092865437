"""Proving a plan file is exactly the canonical bytes its fingerprint covers, without re-serialising it.

A plan file is ``canonical_bytes(plan)``, and its fingerprint is the sha256 of
``canonical_bytes(body)``, the same document without the ``fingerprint`` key. In canonical form
that key is one line, ``  "fingerprint": "<hex>",``, sitting between the top-level keys that sort
around it, so the body's canonical bytes are the file with that one line taken out. Hashing them
is a single sha256 over the file; re-serialising the parsed document with ``indent=2`` (Python's
pure-Python encoder) cost most of a plan load.

When the hash matches, the bytes hashed are the canonical body (sha256 is collision resistant),
and the line's place among the sorted keys makes the whole file the canonical form of the parsed
document. Anything else answers False, and the caller falls back to serialising, which also
words the error.
"""

from __future__ import annotations

import hashlib
from typing import Any

_KEY_LINE = b'\n  "'


def canonical_and_sealed(raw: bytes, data: dict[str, Any]) -> bool:
    """Whether ``raw`` (parsed as ``data``) is canonical and its body hashes to its fingerprint."""
    claimed = data.get("fingerprint")
    if not isinstance(claimed, str) or not claimed.isascii():
        return False
    line = b'\n  "fingerprint": "' + claimed.encode("ascii") + b'",'
    start = raw.find(line)
    if start < 0:
        return False
    end = start + len(line)
    body = raw[:start] + raw[end:]
    if hashlib.sha256(body).hexdigest() != claimed:
        return False
    # a 2-space-indented line opening with a quote is a top-level key: nested keys sit deeper, and
    # JSON strings hold no raw newline
    before = raw.rfind(_KEY_LINE, 0, start)
    if before < 0:
        placed_after = start == 1 and raw.startswith(b"{")
    else:
        placed_after = _key_at(raw, before) < "fingerprint"
    return placed_after and raw.startswith(_KEY_LINE, end) and _key_at(raw, end) > "fingerprint"


def _key_at(raw: bytes, at: int) -> str:
    open_quote = at + len(_KEY_LINE)
    return raw[open_quote : raw.index(b'"', open_quote)].decode("utf-8", "replace")


def with_fingerprint(body: bytes, fingerprint: str) -> bytes | None:
    """The canonical plan file for canonical ``body`` bytes: the fingerprint line put in its
    sorted place, so sealing a plan serialises it once, not twice. None when the key would be
    the last (it never is; the caller then serialises)."""
    at = 0
    while True:
        at = body.find(_KEY_LINE, at)
        if at < 0:
            return None
        if _key_at(body, at) > "fingerprint":
            break
        at += 1
    line = b'\n  "fingerprint": "' + fingerprint.encode("ascii") + b'",'
    return body[:at] + line + body[at:]
