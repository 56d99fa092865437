"""Reasoning carriers the emulators mint, bound to their origin, and verify on replay.

A provider's signature (Anthropic's thinking ``signature``, Gemini's ``thoughtSignature``,
OpenAI's ``encrypted_content``) is opaque to the caller and valid only for the provider route and
model that made it, over the exact text it was made with. The emulators model that with an HMAC
over (route, model, text) under a key of the emulator's own: an edited text, another model or
another route (a second emulator has another key and name) all fail verification, as they do on
the real provider.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass, field

#: what a minted carrier starts with, so a test reading the wire can tell it from anything else
PREFIX = "cpl1"


@dataclass(frozen=True)
class CarrierMint:
    """Mints and verifies the carriers of one emulated provider route."""

    route: str
    key: bytes = field(default_factory=lambda: secrets.token_bytes(32), repr=False)

    def mint(self, model: str, text: str) -> str:
        """The carrier for ``text`` made by ``model`` on this route."""
        return PREFIX + base64.urlsafe_b64encode(self._mac(model, text)).decode("ascii").rstrip("=")

    def verify(self, carrier: object, model: str, text: str) -> bool:
        """Whether ``carrier`` is this route's carrier for ``text`` made by ``model``."""
        if not isinstance(carrier, str) or not carrier.startswith(PREFIX):
            return False
        expected = self.mint(model, text)
        return hmac.compare_digest(carrier.encode("utf-8", "replace"), expected.encode("ascii"))

    def _mac(self, model: str, text: str) -> bytes:
        message = "\0".join((self.route, model, text)).encode("utf-8", "surrogatepass")
        return hmac.new(self.key, message, hashlib.sha256).digest()
