"""Picks the wire format of a route."""

from __future__ import annotations

from .wire_base import Wire
from .wire_chat import ChatWire
from .wire_gemini import GeminiWire
from .wire_responses import ResponsesWire


def wire_for(kind: str) -> Wire:
    """The wire format object for ``chat``, ``responses`` or ``gemini``."""
    wires: dict[str, Wire] = {"chat": ChatWire(), "responses": ResponsesWire(), "gemini": GeminiWire()}
    return wires[kind]
