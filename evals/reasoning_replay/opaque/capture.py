"""What turn 1 gave back, ready to replay verbatim or stripped in turn 2."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from capplan.evals.reasoning_replay.routes import Route

Payload = list[dict[str, Any]]


@dataclass
class Capture:
    """Turn-1 carriers of one response.

    ``usable`` means there is a tool call to continue from and at least one carrier to
    replay. ``summary`` goes into the turn-1 record (carrier names, formats, signatures).
    """

    usable: bool
    summary: dict[str, Any]
    call_id: str = ""
    turns: dict[str, Any] = field(default_factory=dict)  # variant -> replayed turn / items


class OpaqueFlavour(Protocol):
    """Step 2 for one wire format."""

    def turn1_payload(self) -> Payload:
        """The live turn-1 conversation (system/user task, no history)."""

    def force_tool(self, choice: str) -> dict[str, Any]:
        """Body fields that make turn 1 call the tool: ``required`` (any tool) or ``tool`` (by name)."""

    def capture(self, body: dict[str, Any], route: Route) -> Capture:
        """The carriers in a turn-1 response."""

    def turn2(self, capture: Capture, position: str, probe: str, route: Route
              ) -> list[tuple[str, Payload, dict[str, Any] | None]]:
        """(variant, conversation, extra body fields) for turn 2; the baseline comes first."""
