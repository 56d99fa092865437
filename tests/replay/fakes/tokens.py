"""A toy tokenizer and the shared pieces of a fake model: render, count, answer, encrypt.

Token counts always come from rendering the prompt the server actually received and
counting it; nothing is keyed on what the client meant to send.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from typing import Any

_TOKEN = re.compile(r"\w+|[^\w\s]")
_CANARY = re.compile(r"verification word for this task is (\w+)")
_SECRET = b"loopback-provider-private-key"


def count(text: str) -> int:
    """Word pieces and punctuation marks, like a crude BPE."""
    return len(_TOKEN.findall(text))


def answer_from(prompt: str) -> str:
    """The fake model answers the probe from what actually reached its prompt."""
    found = _CANARY.search(prompt)
    return found.group(1) if found else "NONE"


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def encrypt(text: str) -> str:
    """An opaque blob only this server can read back (XOR with a private key stream)."""
    data = text.encode()
    stream = hashlib.sha256(_SECRET).digest() * (len(data) // 32 + 1)
    return base64.b64encode(bytes(a ^ b for a, b in zip(data, stream))).decode()


def decrypt(blob: str) -> str | None:
    """The text behind :func:`encrypt`, or None when the blob is not ours."""
    try:
        data = base64.b64decode(blob.encode(), validate=True)
    except (ValueError, UnicodeError):
        return None
    stream = hashlib.sha256(_SECRET).digest() * (len(data) // 32 + 1)
    try:
        text = bytes(a ^ b for a, b in zip(data, stream)).decode()
    except UnicodeDecodeError:
        return None
    return text if text.startswith("[r]") else None


TURN1_REASONING = ("[r] The user wants current weather for Paris. The get_weather tool takes a "
                   "city argument, so I will call it with city Paris, then report temperature, "
                   "conditions and wind in one short sentence without extra commentary. I should "
                   "not guess the numbers; the tool result is the only source for them.")
