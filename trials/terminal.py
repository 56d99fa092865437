"""The one way to end a conversation from inside it (the loop, a user adapter, a tool runner)."""

from __future__ import annotations

from capplan.trials.outcome import TerminationReason


class Terminal(Exception):
    """Ends the conversation with ``reason``; the loop records how many turns were taken."""

    def __init__(self, reason: TerminationReason, detail: str = "") -> None:
        super().__init__(detail)
        self.reason = reason
        self._detail = detail

    @property
    def detail(self) -> str:
        """The reason's detail, then every note added on the way out (e.g. the user reply guard's discards)."""
        notes = [str(n) for n in getattr(self, "__notes__", ())]
        return "; ".join([self._detail, *notes]) if notes else self._detail
