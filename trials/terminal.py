"""The one way to end a conversation from inside it (the loop, a user adapter, a tool runner)."""

from __future__ import annotations

from capplan.trials.outcome import TerminationReason


class Terminal(Exception):
    """Ends the conversation with ``reason``; the loop records how many turns were taken."""

    def __init__(self, reason: TerminationReason, detail: str = "") -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail
