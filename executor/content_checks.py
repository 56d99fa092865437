"""Content parts checked before they reach a provider: where an image may come from, and its bytes.

Only ``https``/``http`` URLs (the provider fetches them) and ``data:`` URLs (the bytes are in
the request) make sense as images; anything else (``javascript:``, ``file:``) is refused, and
inline bytes must be base64 that decodes.
"""

from __future__ import annotations

import binascii
import re

#: ``data:<media type>[;params];base64,<payload>`` — the only data URL shape providers take for images
_DATA_URL = re.compile(r"data:(?P<type>[\w.+-]+/[\w.+-]+)(?:;[\w.+-]+=[\w.+-]+)*;base64,(?P<data>.*)", re.DOTALL)


def image_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be an image part's URL, or None."""
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    if scheme in ("http", "https"):
        return None if re.match(r"(?i)https?://[^/\s]+", url) else "the URL has no host"
    if scheme != "data":
        return f"image URLs are https://, http:// or data: URLs, not {scheme + ':' if scheme else 'a relative path'}"
    match = _DATA_URL.fullmatch(url)
    if match is None:
        return "a data: image URL is data:<media type>;base64,<base64 bytes>"
    if not match.group("type").lower().startswith("image/"):
        return f"a data: URL of {match.group('type')!r} is not an image"
    return base64_problem(match.group("data"))


def base64_problem(data: str) -> str | None:
    """Why ``data`` is not decodable base64, or None."""
    try:
        decoded = binascii.a2b_base64(data.encode("ascii"), strict_mode=True)
    except (binascii.Error, UnicodeEncodeError, ValueError) as exc:
        return f"not valid base64 ({exc})"
    if not decoded:
        return "the base64 data is empty"
    return None
