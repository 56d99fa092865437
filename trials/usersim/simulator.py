"""The LLM user simulator: a customer's next turn, generated, guarded, delivered verbatim.

The simulator holds the rendered prompt body and a ``generate`` callable. Each turn it builds
its private, role-flipped request from the shared transcript (which it never modifies), asks
the model through the reply guard, and hands back exactly the words the model wrote together
with the attempts the guard discarded on the way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from capplan.trials.usersim.contract import GenerateFn, GenerationLike, Message
from capplan.trials.usersim.guard import GuardEvent, ReplyDefect, UserReplyGuard
from capplan.trials.usersim.prompt import STOP_SIGNAL, render_system_prompt
from capplan.trials.usersim.request import SIMULATOR_GREETING, build_request, opening_request
from capplan.trials.usersim.tool_loop import UserTools, UserToolStepsExceeded, exchange, own_request, requested_calls

_DEFAULT_GUARD = UserReplyGuard()


@dataclass(frozen=True, slots=True)
class UserReply:
    """One delivered user turn.

    ``text`` is the accepted generation's text, unaltered. ``guard_rejections`` carries the
    defects of the attempts discarded before it (empty when the first generation was clean),
    and ``guard_event`` the trajectory record for a turn that needed regeneration.
    """

    text: str
    generation: GenerationLike
    message_index: int
    guard_rejections: tuple[ReplyDefect, ...]
    guard_event: GuardEvent | None

    @property
    def stops(self) -> bool:
        """Whether the simulated user ended the conversation with the stop signal."""
        return STOP_SIGNAL in self.text


class UserSimulator:
    """Generates the simulated user's turns for one trial.

    ``backstory`` None renders no Instruction section. ``record_event`` receives every guard
    event (a turn delivered after discards, or refused) as it happens, before a refusal is
    raised. ``trial_id`` is stamped on every guard log line so a discarded reply can be traced
    to the trial that paid for it.

    ``tools`` gives the user tools of their own (dual control, :mod:`.tool_loop`): a turn may then
    call them, up to ``tools.max_steps`` tool-calling generations, before it answers in words;
    the guard judges only the words, and a regeneration it asks for continues after the calls
    already made (they acted: they stay done).
    """

    def __init__(
        self,
        generate: GenerateFn,
        *,
        trial_id: str,
        backstory: str | None = None,
        tool_schemas: Sequence[Mapping[str, Any]] = (),
        greeting: str = SIMULATOR_GREETING,
        guard: UserReplyGuard = _DEFAULT_GUARD,
        record_event: Callable[[GuardEvent], None] | None = None,
        tools: UserTools | None = None,
    ) -> None:
        if not trial_id:
            raise ValueError("trial_id is required: guard log lines must name their trial")
        self._generate = generate
        self.trial_id = trial_id
        self.tools = tools
        self.system_prompt = render_system_prompt(
            backstory, tool_schemas=tool_schemas or (tools.schemas if tools is not None else ()))
        self.greeting = greeting
        self.guard = guard
        self._record_event = record_event
        #: the user's own tool exchanges, by the message index of the turn they preceded
        self.exchanges: dict[int, list[Message]] = {}
        self._calls_made = 0

    def open(self, *, message_index: int) -> UserReply:
        """The simulator-bootstrapped opening turn: the reply to the greeting alone.

        The greeting is not part of the shared transcript; ``message_index`` is where the
        caller will place the opening in it.
        """
        return self._guarded(opening_request(greeting=self.greeting), message_index, ())

    def reply(
        self, transcript: Sequence[Mapping[str, Any]], *, message_index: int | None = None
    ) -> UserReply:
        """The next user turn answering the agent's last dialogue turn in ``transcript``.

        ``message_index`` defaults to ``len(transcript)``, the position the reply is appended
        at. Raises :class:`~capplan.trials.usersim.request.UnanswerableTranscript` when there is
        nothing to answer, and :class:`~capplan.trials.usersim.guard.UserReplyRefused` when every
        generation is flagged.
        """
        request = build_request(transcript, greeting=self.greeting)
        index = len(transcript) if message_index is None else message_index
        return self._guarded(request, index, transcript)

    def _guarded(self, request: list[Message], message_index: int,
                 transcript: Sequence[Mapping[str, Any]]) -> UserReply:
        tools = self.tools
        current: list[Message] = []  # this turn's own tool exchanges, kept across the guard's attempts
        steps = 0

        def generate_once() -> GenerationLike:
            nonlocal steps
            if tools is None:
                # A fresh copy per attempt: a callable that mutates its arguments must not leak
                # into the next attempt's request.
                return self._generate(self.system_prompt, [dict(message) for message in request])
            while True:
                messages = own_request(transcript, self.exchanges, greeting=self.greeting, current=current)
                generation = self._generate(self.system_prompt, messages)
                calls = requested_calls(generation)
                if not calls:
                    return generation
                steps += 1
                if steps > tools.max_steps:
                    raise UserToolStepsExceeded(
                        f"the simulated user made more than {tools.max_steps} tool-calling generation(s) in one turn "
                        "(user.max_tool_steps)")
                ids = [f"user_call_{self._calls_made + k}" for k in range(len(calls))]
                self._calls_made += len(calls)
                results = [tools.run(call.name, call.arguments, call_id, message_index)
                           for call, call_id in zip(calls, ids)]
                current.extend(exchange(calls, ids, results, generation.text))

        guarded = self.guard.enforce(
            generate_once,
            trial_id=self.trial_id,
            message_index=message_index,
            record_event=self._record_event,
        )
        if current:
            self.exchanges[message_index] = current
        return UserReply(
            text=guarded.generation.text,
            generation=guarded.generation,
            message_index=message_index,
            guard_rejections=guarded.rejections,
            guard_event=guarded.event,
        )
