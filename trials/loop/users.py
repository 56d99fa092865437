"""The user side of a trial: a script, or the LLM user simulator behind its reply guard.

Both adapters answer the same two questions: the opening turn, and the reply to the
conversation so far (``None`` when the user has stopped). Scripted turns and an authored
initial message are delivered verbatim and never pass the guard; generated ones always do.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from capplan.executor.result import GenerationResult
from capplan.trials.run_folder.recording import wire_message
from capplan.trials.usersim import (STOP_SIGNAL, GuardEvent, UnanswerableTranscript, UserReplyRefused, UserSimulator,
                                    UserTools, UserToolStepsExceeded)
from capplan.trials.terminal import Terminal
from capplan.trials.outcome import TerminationReason


@dataclass(frozen=True)
class UserTurn:
    """One user turn; ``stops`` ends the conversation (the text is still recorded) with ``reason``."""

    text: str
    stops: bool = False
    #: the termination reason a stop ends the trial with (a task's own stop signals name theirs)
    reason: TerminationReason = TerminationReason.USER_STOP


class UserAdapter(Protocol):
    def open(self) -> UserTurn: ...

    def reply(self, transcript: Sequence[dict[str, Any]], message_index: int) -> UserTurn: ...

    def stops_next(self) -> bool:
        """Whether the next reply is known, without making it, to stop the conversation."""
        ...


class ScriptedUser:
    """Says its turns in order; after the last one it stops."""

    def __init__(self, turns: Sequence[str]) -> None:
        self._turns = list(turns)
        self._next = 0

    def open(self) -> UserTurn:
        return self._take()

    def reply(self, transcript: Sequence[dict[str, Any]], message_index: int) -> UserTurn:
        return self._take()

    def stops_next(self) -> bool:
        """The script has run out, or its next turn is the stop."""
        return self._next >= len(self._turns) or STOP_SIGNAL in self._turns[self._next]

    def _take(self) -> UserTurn:
        if self._next >= len(self._turns):
            return UserTurn("", stops=True)
        text = self._turns[self._next]
        self._next += 1
        return UserTurn(text, stops=STOP_SIGNAL in text)


#: One simulator generation: the request and the index of the user turn it is for (0 = the opening).
UserGenerate = Callable[[dict[str, Any], int], GenerationResult]


class LlmUser:
    """The user simulator, driven by the user plan's client; every generation (guard retries included) is
    billed by ``generate`` under the user turn it was made for.

    ``tools`` gives the user tools of their own (dual control): their schemas ride on every simulator
    request, and ``tools.run`` (the runner's) executes and records each call the simulator makes.
    """

    def __init__(
        self,
        generate: UserGenerate,
        *,
        trial_id: str,
        backstory: str | None,
        initial_message: str | None,
        on_guard_event: Callable[[GuardEvent], None],
        stop_signals: Mapping[str, TerminationReason] | None = None,
        tools: UserTools | None = None,
    ) -> None:
        offered = [dict(schema) for schema in tools.schemas] if tools is not None else []

        def simulator_generate(system_prompt: str, messages: list[dict[str, Any]]) -> GenerationResult:
            request: dict[str, Any] = {"system": system_prompt, "messages": messages}
            if offered:
                request["tools"] = offered
            return generate(request, self.user_turn)

        self.simulator = UserSimulator(simulator_generate, trial_id=trial_id, backstory=backstory,
                                       record_event=on_guard_event, tools=tools)
        self._initial = initial_message
        self._signals = dict(stop_signals or {})
        #: The user turn being produced: 0 for the opening, then one more per reply.
        self.user_turn = 0

    def open(self) -> UserTurn:
        self.user_turn = 0
        if self._initial is not None:
            return UserTurn(self._initial, stops=False)
        try:
            reply = self.simulator.open(message_index=0)
        except (UserReplyRefused, UnanswerableTranscript, UserToolStepsExceeded) as exc:
            raise _harness_error(exc) from exc
        if not reply.text.replace(STOP_SIGNAL, "").strip():
            # an opening that says nothing ends the trial before the agent speaks: the simulator's
            # defect, never a user stop the agent is answerable for
            raise Terminal(TerminationReason.ERROR, "user simulator: the opening turn is empty")
        return self._turn(reply.text, reply.stops)

    def _turn(self, text: str, stops: bool) -> UserTurn:
        """The turn, ended by ``###STOP###`` first, else by the first of the task's own stop signals it contains."""
        if stops:
            return UserTurn(text, True)
        reason = next((r for signal, r in self._signals.items() if signal in text), None)
        return UserTurn(text, True, reason) if reason is not None else UserTurn(text)

    def stops_next(self) -> bool:
        """Never known ahead: only a generation (billed) would say."""
        return False

    def reply(self, transcript: Sequence[dict[str, Any]], message_index: int) -> UserTurn:
        self.user_turn += 1
        # the simulator sees messages as the wire carries them: the record's origin tags stay in the record
        shared = [wire_message(m) for m in transcript if m.get("role") in ("user", "assistant", "tool")]
        try:
            reply = self.simulator.reply(shared, message_index=message_index)
        except (UserReplyRefused, UnanswerableTranscript, UserToolStepsExceeded) as exc:
            raise _harness_error(exc) from exc
        return self._turn(reply.text, reply.stops)


def _harness_error(exc: Exception) -> Terminal:
    # a refused or unanswerable user turn is our defect: counted, never the agent's
    return Terminal(TerminationReason.ERROR, f"user simulator: {type(exc).__name__}: {exc}")
