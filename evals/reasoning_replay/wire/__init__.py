"""The wire: each API kind's request and response formats, the request settings, the carriers.

:func:`wire_for` picks the wire format of a route.
"""

from __future__ import annotations

from capplan.evals.reasoning_replay.wire.base import Wire
from capplan.evals.reasoning_replay.wire.chat import ChatWire
from capplan.evals.reasoning_replay.wire.gemini import GeminiWire
from capplan.evals.reasoning_replay.wire.responses import ResponsesWire


def wire_for(kind: str) -> Wire:
    """The wire format object for ``chat``, ``responses`` or ``gemini``."""
    wires: dict[str, Wire] = {"chat": ChatWire(), "responses": ResponsesWire(), "gemini": GeminiWire()}
    return wires[kind]
