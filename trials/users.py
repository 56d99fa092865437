"""The user side of a trial: a script, or the LLM user simulator behind its reply guard.

Both adapters answer the same two questions: the opening turn, and the reply to the
conversation so far (``None`` when the user has stopped). Scripted turns and an authored
initial message are delivered verbatim and never pass the guard; generated ones always do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from capplan.executor.result import GenerationResult
from capplan.trials.usersim import STOP_SIGNAL, GuardEvent, UnanswerableTranscript, UserReplyRefused, UserSimulator
from capplan.trials.terminal import Terminal
from capplan.trials.outcome import TerminationReason


@dataclass(frozen=True)
class UserTurn:
    """One user turn; ``stops`` ends the conversation (the text is still recorded)."""

    text: str
    stops: bool = False


class UserAdapter(Protocol):
    def open(self) -> UserTurn: ...

    def reply(self, transcript: Sequence[dict[str, Any]], message_index: int) -> UserTurn: ...


class ScriptedUser:
    """Says its turns in order; after the last one it stops."""

    def __init__(self, turns: Sequence[str]) -> None:
        self._turns = list(turns)
        self._next = 0

    def open(self) -> UserTurn:
        return self._take()

    def reply(self, transcript: Sequence[dict[str, Any]], message_index: int) -> UserTurn:
        return self._take()

    def _take(self) -> UserTurn:
        if self._next >= len(self._turns):
            return UserTurn("", stops=True)
        text = self._turns[self._next]
        self._next += 1
        return UserTurn(text, stops=STOP_SIGNAL in text)


class LlmUser:
    """The user simulator, driven by the user plan's client; every generation is billed via ``on_call``."""

    def __init__(
        self,
        generate: Callable[[dict[str, Any]], GenerationResult],
        *,
        trial_id: str,
        backstory: str | None,
        initial_message: str | None,
        on_guard_event: Callable[[GuardEvent], None],
    ) -> None:
        def simulator_generate(system_prompt: str, messages: list[dict[str, Any]]) -> GenerationResult:
            return generate({"system": system_prompt, "messages": messages})

        self.simulator = UserSimulator(simulator_generate, trial_id=trial_id, backstory=backstory,
                                       record_event=on_guard_event)
        self._initial = initial_message

    def open(self) -> UserTurn:
        if self._initial is not None:
            return UserTurn(self._initial, stops=False)
        try:
            reply = self.simulator.open(message_index=0)
        except (UserReplyRefused, UnanswerableTranscript) as exc:
            raise _harness_error(exc) from exc
        return UserTurn(reply.text, reply.stops)

    def reply(self, transcript: Sequence[dict[str, Any]], message_index: int) -> UserTurn:
        shared = [m for m in transcript if m.get("role") in ("user", "assistant", "tool")]
        try:
            reply = self.simulator.reply(shared, message_index=message_index)
        except (UserReplyRefused, UnanswerableTranscript) as exc:
            raise _harness_error(exc) from exc
        return UserTurn(reply.text, reply.stops)


def _harness_error(exc: Exception) -> Terminal:
    # a refused or unanswerable user turn is our defect: counted, never the agent's
    return Terminal(TerminationReason.ERROR, f"user simulator: {type(exc).__name__}: {exc}")
