"""Which upstream answered: the response id names the lane.

On the Nous Portal a ``gen-…`` id is the OpenRouter lane; any other id (``chatcmpl-``, a
uuid, ``msg_``…) is a direct upstream. The same public model id can switch lanes between
calls, so results are keyed by ``(route, model, lane)``. An error without an id cannot be
placed and is ``unknown``.
"""

from __future__ import annotations

import re

from capplan.evals.reasoning_replay.routes import Route

OPENROUTER = "openrouter"
DIRECT = "direct"
UNKNOWN = "unknown"

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)
_PREFIX = re.compile(r"[A-Za-z]+[-_]?")


def lane_of(route: Route, response_id: str, status: int = 200) -> str:
    """``openrouter``, ``direct`` or ``unknown`` for a response on ``route``."""
    if not route.lanes:
        return DIRECT  # a vendor route has one lane: the vendor
    if not response_id:
        return UNKNOWN
    return OPENROUTER if response_id.startswith("gen-") else DIRECT


def id_prefix(response_id: str) -> str:
    """A short, non-identifying label of the id's shape (``gen-``, ``chatcmpl-``, ``uuid``)."""
    if not response_id:
        return "-"
    if _UUID.fullmatch(response_id):
        return "uuid"
    match = _PREFIX.match(response_id)
    return match.group(0) if match else response_id[:4]
