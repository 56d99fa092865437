"""The tool-calling loop: agent turn -> tools -> agent turn ... -> user turn, until a terminal.

One :class:`ToolCallingLoop` runs one trial's conversation. The agent answers; its tool calls
run against the trial's environment and their results go back; when it answers in text, the
user speaks. The conversation ends on the user's stop, the turn budget, or a terminal reason.

Two views of the conversation: ``wire`` is what the next request carries, the recorder's
``messages`` is what happened. They differ only after a context-window handoff (the wire is
compacted, the record is not) and by the record-only markers (summarise, terminal, the
user's stop turn).

A failed generation never mutates either view, so the API-error retry replays in place
against the unchanged prefix; that budget and the three resample budgets reset every turn. A
request the provider refused (a 4xx other than 408, 409 and 429) is not replayed: it would be
refused again. A replay's attempts are numbered on from the failed call's (every send counts).

The agent's request is built incrementally: one :class:`~capplan.executor.messages.ChatRequest`
per conversation, extended by the messages each turn adds (``ChatRequest.extended``), so every
message is validated once and the executor converts only the new ones (its conversation cache
recognises the shared prefix). It is rebuilt from the wire only when the wire is replaced (a
context-window handoff) or the offered tools change. The wire is the same either way.

Per-task choices the loop applies:

- ``tool_choice`` and ``parallel_tool_calls`` ride on every agent request that carries tools
  (they travel only beside tools), subject to the plan's ``param_value_rules`` like any
  request's;
- a tool with ``available_from_turn: k`` is offered from user turn ``k`` (0-based: 0 is the
  opening) on; before that the request does not carry it and a call of it is an unknown tool;
- ``max_steps_per_turn: N`` follows BFCL's step limit: the agent completions that call tools
  within one user turn are counted, and when the count passes N (after that step's calls have
  run, as BFCL runs them) the turn is force-quit and the conversation ends there, termination
  ``max_steps_per_turn`` (a marker in the record says so), not handed back to the user. As BFCL,
  the trial is then graded like any other: force-quit in the last user turn, it can pass; before
  it, the turns never played fail its per-turn graders (and BFCL's turn count). A text answer
  ends the turn and is never counted.

The turn budget is checked before each agent turn and after a text answer; after a text answer
it ends the conversation ``max_turns`` unless a scripted user stops there anyway (its script has
run out or its next turn is the stop), which is the user's stop: the agent answered within its budget.

At the end of each user turn (the agent answered in text) and at the terminal, a
:class:`~capplan.trials.run_folder.records.TurnCheckpoint` records the environment's state and that turn's
tool outputs (full, redacted) for the per-turn graders.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from capplan.executor.messages import ChatRequest, ReasoningIn
from capplan.executor.plan import LoopKnobs
from capplan.executor.retrying import is_refused
from capplan.executor.responses_response import UnknownOutputItemError
from capplan.executor.result import GenerationResult, ParserError, ToolCall
from capplan.trials.loop import handoff
from capplan.trials.loop.classify import Classify, problem_of
from capplan.trials.outcome import FinalAnswer, TerminationReason
from capplan.trials.terminal import Terminal
from capplan.trials.run_folder.recording import GENERATION_ID, ORIGIN, SENT_ARGUMENTS, MetricsSink, Recorder, scrub
from capplan.trials.run_folder.records import ParserErrorRecord, SummarizeEvent, TurnCheckpoint
from capplan.trials.loop.retry_classes import (OUTPUT_LENGTH_FEEDBACK, RetryClass, TurnBudgets, empty_cause,
                                          parser_error_feedback, trigger)
from capplan.trials.tasks.task_code import TaskCodeCancelled
from capplan.trials.loop.tool_call_ids import ToolCallIds
from capplan.trials.loop.tools import ToolRunner
from capplan.trials.loop.turn_budget import budget_spent
from capplan.trials.loop.users import UserAdapter

#: The API-error retry: one replay, one second apart (the spec's loop defaults; not plan knobs).
API_ERROR_RETRIES = 1
API_ERROR_BACKOFF_S = 1.0

#: The agent's (and the summariser's) call: a request in, a parsed generation out.
Generate = Callable[[ChatRequest | dict[str, Any]], GenerationResult]
#: The environment's state now: ``(state, None)``, or ``(None, why it could not be read)``.
ReadState = Callable[[], tuple[dict[str, Any] | None, str | None]]
#: ``tool_choice`` as the request carries it: auto / required / none, or a named function.
WireToolChoice = str | dict[str, Any]


@dataclass(frozen=True)
class LoopConfig:
    """Everything the loop reads, resolved before it starts."""

    knobs: LoopKnobs
    max_turns: int
    api_error_retries: int = API_ERROR_RETRIES
    api_error_backoff_s: float = API_ERROR_BACKOFF_S
    #: BFCL's step limit (see the module docstring); None: no limit within a user turn
    max_steps_per_turn: int | None = None
    tool_choice: WireToolChoice | None = None
    parallel_tool_calls: bool | None = None
    #: how the context handoff writes its recap (the spec's summarise policy seam)
    summarize_policy: handoff.SummarizePolicy = handoff.DEFAULT_SUMMARIZER


@dataclass
class LoopEnd:
    """How the conversation ended."""

    reason: TerminationReason
    turns: int
    detail: str = ""


@dataclass
class _TurnState:
    turn: int
    budgets: TurnBudgets
    attempts: dict[RetryClass, int] = field(default_factory=dict)

    def attempt(self, retry: RetryClass) -> int:
        self.attempts[retry] = self.attempts.get(retry, 0) + 1
        return self.attempts[retry]


class ToolCallingLoop:
    """One trial's conversation."""

    def __init__(
        self,
        *,
        generate: Generate,
        system_prompt: str,
        tools: list[dict[str, Any]],
        tool_runner: ToolRunner,
        user: UserAdapter,
        recorder: Recorder,
        sink: MetricsSink,
        config: LoopConfig,
        sleep: Callable[[float], None],
        classify: Classify,
        cancel: threading.Event | None = None,
        route: tuple[str | None, str | None] = (None, None),
        tool_from_turn: Mapping[str, int] | None = None,
        read_state: ReadState | None = None,
    ) -> None:
        """``route`` is the agent client's gateway route and kind, recorded on attempts of calls that raised.

        ``tool_from_turn`` maps a tool to the user turn it is offered from (absent: from the
        start); ``read_state`` reads the environment for the checkpoints (None: no checkpoints).
        """
        self._generate_raw = generate
        self.system_prompt = system_prompt
        self.tools = tools
        self.tool_names = [t["function"]["name"] for t in tools]
        self.tool_from_turn = dict(tool_from_turn or {})
        self.read_state = read_state
        self.checkpoints: list[TurnCheckpoint] = []
        #: the user turn under way (0: the opening) and where its tool calls start in the record
        self.user_turn = 0
        self._turn_calls_start = 0
        self._calls_at_checkpoint = 0
        self._steps_in_turn = 0
        self._offered: tuple[list[dict[str, Any]], frozenset[str]] | None = None
        self._offered_turn = -1
        # the last agent request, the wire list it was built from and how much of it it holds
        self._request: ChatRequest | None = None
        self._request_wire: list[dict[str, Any]] | None = None
        self._request_len = 0
        self._request_tools: list[dict[str, Any]] | None = None
        self._turns = 0
        self.tool_runner = tool_runner
        self.user = user
        self.recorder = recorder
        self.sink = sink
        self.config = config
        self.sleep = sleep
        self.cancel = cancel
        self.classify = classify
        self.route = route
        self.ids = ToolCallIds()
        self.wire: list[dict[str, Any]] = []
        self._first_user: dict[str, Any] | None = None
        #: the agent's last completion when it answered in text (None after a tool-calling one): the pass rule reads it
        self.final_answer: FinalAnswer | None = None

    # --- the outer loop ---------------------------------------------------------------------

    def run(self) -> LoopEnd:
        """The conversation, to its end; the checkpoint of the turn under way is taken at the terminal."""
        self._turns = 0
        end = self._converse()
        if end.reason is not TerminationReason.INTERRUPTED and self._checkpointed() < self.user_turn + 1:
            try:
                self._checkpoint()
            except TaskCodeCancelled:
                return LoopEnd(TerminationReason.INTERRUPTED, end.turns, "the run was interrupted")
        return end

    def _converse(self) -> LoopEnd:
        try:
            opening = self.user.open()
            if opening.stops or not opening.text:
                if opening.text:
                    self.recorder.message({"role": "user", "content": opening.text})
                return LoopEnd(opening.reason, self._turns, "the user stopped before the agent spoke")
            self._append_both({"role": "user", "content": opening.text})
            while True:
                if self.cancel is not None and self.cancel.is_set():
                    return LoopEnd(TerminationReason.INTERRUPTED, self._turns, "the run was interrupted")
                if budget_spent(self._turns, self.config.max_turns):
                    return self._budget_end(self._turns)
                result = self._run_turn(self._turns)
                self._turns += 1
                if result.tool_calls:
                    self.final_answer = None  # the last word was a tool call, not an answer
                    self._steps_in_turn += 1
                    limit = self.config.max_steps_per_turn
                    if limit is not None and self._steps_in_turn > limit:
                        return self._steps_end(limit)
                    continue
                self._checkpoint()  # the agent answered in text: this user turn is over
                self.final_answer = FinalAnswer(result.text, result.finish_reason)
                if budget_spent(self._turns, self.config.max_turns) and not self.user.stops_next():
                    # the conversation cannot go on: a user reply now would be generated (and billed) unread;
                    # a script that ends here ends the conversation instead, within its budget
                    return self._budget_end(self._turns)
                reply = self.user.reply(self.recorder.messages, len(self.recorder.messages))
                if reply.stops:
                    if reply.text:  # a stop turn is what the user said; the end of a script says nothing
                        self.recorder.message({"role": "user", "content": reply.text})
                    return LoopEnd(reply.reason, self._turns)
                self._next_user_turn()
                self._append_both({"role": "user", "content": reply.text})
        except Terminal as end:
            return LoopEnd(end.reason, self._turns, end.detail)
        except TaskCodeCancelled:  # a tool or a state read was under way when the run was interrupted
            return LoopEnd(TerminationReason.INTERRUPTED, self._turns, "the run was interrupted")

    def _steps_end(self, limit: int) -> LoopEnd:
        self.recorder.marker(f"Step limit of {limit} tool-calling completions in user turn {self.user_turn} "
                             "passed; the turn was force-quit and the conversation ended (graded as it stands).",
                             "max_steps_per_turn")
        return LoopEnd(TerminationReason.MAX_STEPS_PER_TURN, self._turns,
                       f"user turn {self.user_turn}: the agent made {self._steps_in_turn} tool-calling completions "
                       f"(max_steps_per_turn: {limit}); the turn was force-quit")

    # --- user turns and checkpoints --------------------------------------------------------

    def _next_user_turn(self) -> None:
        self.user_turn += 1
        self._steps_in_turn = 0
        self._turn_calls_start = len(self.recorder.tool_calls)

    def _checkpointed(self) -> int:
        return len(self.checkpoints)

    def calls_since_checkpoint(self) -> int:
        """Tool calls run since the last checkpoint was taken (all of them, when none was)."""
        return len(self.recorder.tool_calls) - self._calls_at_checkpoint

    def _checkpoint(self) -> None:
        """The state and this user turn's tool outputs, once per user turn (raises TaskCodeCancelled)."""
        if self.read_state is None or self._checkpointed() > self.user_turn:
            return
        state, error = self.read_state()
        outputs = [c.output for c in self.recorder.tool_calls[self._turn_calls_start:]]
        self.checkpoints.append(TurnCheckpoint(user_turn=self.user_turn, state=state, state_error=error,
                                               tool_outputs=outputs))
        self._calls_at_checkpoint = len(self.recorder.tool_calls)

    def _budget_end(self, turns: int) -> LoopEnd:
        self.recorder.marker(f"Turn budget of {self.config.max_turns} agent turns reached; trial ended.", "turn_budget")
        return LoopEnd(TerminationReason.MAX_TURNS, turns)

    def _append_both(self, message: dict[str, Any], *, origin: str | None = None,
                     generation_id: str | None = None, sent_arguments: dict[str, str] | None = None) -> None:
        """``message`` onto the wire and into the record; ``origin``, ``generation_id`` and ``sent_arguments`` go on
        the record only.

        The wire copy is exactly the spec's message shape (the golden wire pins it); the recorded
        copy names who wrote a harness-authored turn, which OpenRouter generation an assistant
        turn came from, and the argument text the model sent where the call ran with other arguments.
        """
        if self._first_user is None and message["role"] == "user":
            self._first_user = message
        self.wire.append(message)
        recorded = message
        if origin is not None or generation_id is not None or sent_arguments:
            recorded = dict(message)
            if origin is not None:
                recorded[ORIGIN] = origin
            if generation_id is not None:
                recorded[GENERATION_ID] = generation_id
            if sent_arguments:
                recorded[SENT_ARGUMENTS] = sent_arguments
        self.recorder.message(recorded)

    # --- one agent turn -------------------------------------------------------------------

    def _run_turn(self, turn: int) -> GenerationResult:
        state = _TurnState(turn, TurnBudgets.fresh(self.config.knobs, self.config.api_error_retries))
        if handoff.over_watermark(self.config.knobs, self.sink.last_prompt_tokens):
            self._summarize(turn, "watermark")
        reactive_done = False
        while True:
            try:
                result = self._agent_generate(turn)
            except Terminal:
                raise
            except Exception as exc:  # classified below: every provider failure has a typed end
                if isinstance(exc, UnknownOutputItemError):
                    self.recorder.unread("agent", turn, exc.answer)  # whole: the detail below quotes a part
                reason = self.classify(exc)
                detail = f"{type(exc).__name__}: {scrub(str(exc), self.recorder.secrets)[:1000]}"
                if reason is TerminationReason.CONFIGURATION_ERROR and (problem := problem_of(self.classify, exc)):
                    detail = f"{problem}; {detail}"  # what is wrong first, then what the answerer said
                if reason is TerminationReason.CONTEXT_WINDOW_EXCEEDED:
                    if handoff.armed(self.config.knobs) and not reactive_done:
                        reactive_done = True
                        self._summarize(turn, "context_window_error")
                        continue
                    suffix = " (after a summarise)" if reactive_done else ""
                    raise Terminal(reason, detail + suffix) from None
                # a refused request (a 4xx other than 408/409/429) is refused again: it is never sent twice
                if (reason is TerminationReason.API_ERROR and not is_refused(exc)
                        and state.budgets.take(RetryClass.API_ERROR)):
                    self.recorder.retry(RetryClass.API_ERROR.value, turn, state.attempt(RetryClass.API_ERROR), detail)
                    self.sink.replaying()  # the replay's sends continue the failed call's attempt numbers
                    self.sink.waited(self.config.api_error_backoff_s)
                    self.sleep(self.config.api_error_backoff_s)
                    continue
                raise Terminal(reason, detail) from None
            accepted = self._inspect(result, state)
            if accepted:
                return self._accept(result, turn)

    def _agent_generate(self, turn: int) -> GenerationResult:
        try:
            with self.sink.sending("agent", turn):
                result = self._generate_raw(self._agent_request())
        except Exception as exc:
            self.sink.failed("agent", turn, exc, self.route)
            raise
        self.sink.call("agent", turn, result)
        self.recorder.generation(result, turn)
        return result

    def _offered_tools(self) -> tuple[list[dict[str, Any]], frozenset[str]]:
        """The tools the agent is offered in the current user turn (their specs, and their names)."""
        if self._offered is None or self._offered_turn != self.user_turn:
            if self.tool_from_turn:
                specs = [t for t in self.tools if self.tool_from_turn.get(t["function"]["name"], 0) <= self.user_turn]
            else:
                specs = self.tools
            names = frozenset(t["function"]["name"] for t in specs)
            if self._offered is None or self._offered[1] != names:
                # a new list only when the set changed: the request is rebuilt when its tools list is replaced
                self._offered = (specs, names)
            self._offered_turn = self.user_turn
        return self._offered

    def _agent_request(self) -> ChatRequest:
        """The last request extended by the wire's new messages; rebuilt when the wire or the tools were replaced."""
        tools = self._offered_tools()[0]
        last = self._request
        if last is not None and self._request_wire is self.wire and self._request_tools is tools:
            if self._request_len == len(self.wire):
                return last  # a replay of the same request (an API-error retry, a resample)
            request = last.extended(self.wire[self._request_len:])
        else:
            body: dict[str, Any] = {"system": self.system_prompt, "messages": self.wire, "tools": tools}
            if tools:  # both travel only beside tools
                if self.config.tool_choice is not None:
                    body["tool_choice"] = self.config.tool_choice
                if self.config.parallel_tool_calls is not None:
                    body["parallel_tool_calls"] = self.config.parallel_tool_calls
            request = ChatRequest.model_validate(body)
            self._request_tools = tools
        self._request, self._request_wire, self._request_len = request, self.wire, len(self.wire)
        return request

    def _inspect(self, result: GenerationResult, state: _TurnState) -> bool:
        """Apply the returned-result retry classes; True when ``result`` is to be accepted."""
        retry = trigger(result)
        if retry is None:
            return True
        turn = state.turn
        if retry is RetryClass.EMPTY_COMPLETION:
            if state.budgets.take(retry):
                self._resampled(retry, turn, state.attempt(retry), empty_cause(result))
                return False
            self.recorder.marker("The model returned an empty completion; trial ended.", "empty_completion")
            raise Terminal(TerminationReason.EMPTY_COMPLETION,
                            f"empty completion after {state.attempts.get(retry, 0)} resample(s); {empty_cause(result)}")
        if retry is RetryClass.PARSER_ERROR:
            resample = state.budgets.take(retry)
            for err in result.parser_errors:
                self.recorder.parser_errors.append(ParserErrorRecord(
                    turn=turn, tool_name=err.tool_name, raw_arguments=scrub(err.raw_arguments, self.recorder.secrets),
                    reason=err.reason, accepted=not resample))
            if resample:
                self._resampled(retry, turn, state.attempt(retry), ", ".join(e.tool_name for e in result.parser_errors))
                self._append_both({"role": "user", "content": parser_error_feedback(result.parser_errors, self.tool_names)},
                                  origin="parser_feedback")
                return False
            return True
        # output length: content-carrying truncation
        if state.budgets.take(retry):
            self._resampled(retry, turn, state.attempt(retry), "finish_reason=length")
            self._append_both({"role": "user", "content": OUTPUT_LENGTH_FEEDBACK}, origin="output_length_feedback")
            return False
        return True

    def _resampled(self, retry: RetryClass, turn: int, attempt: int, detail: str) -> None:
        last = self.sink.calls[-1]
        last.outcome = "resampled"
        last.retry_class = retry.value
        self.recorder.retry(retry.value, turn, attempt, detail)

    def _accept(self, result: GenerationResult, turn: int) -> GenerationResult:
        failed = _parse_failed(result.tool_calls, result.parser_errors)
        calls = [(call, self.ids.assign(call.id), i in failed) for i, call in enumerate(result.tool_calls)]
        message: dict[str, Any] = {"role": "assistant", "content": result.text or None}
        if calls:
            message["tool_calls"] = [
                {"id": new_id, "type": "function",
                 "function": {"name": call.name, "arguments": json.dumps(call.arguments, ensure_ascii=False)}}
                for call, new_id, _ in calls
            ]
        if result.reasoning is not None:
            message["reasoning"] = ReasoningIn.from_structured(result.reasoning).model_dump(mode="json", exclude_none=True)
        sent = {new_id: call.raw_arguments for call, new_id, _ in calls if _not_sent_as_is(call)}
        self._append_both(message, generation_id=result.openrouter_generation_id, sent_arguments=sent or None)
        offered = self._offered_tools()[1]
        for call, new_id, coerced in calls:
            content = self.tool_runner.run(call, new_id, turn, coerced, result.validation_errors, offered)
            self._append_both({"role": "tool", "tool_call_id": new_id, "content": content})
        return result

    # --- context-window handoff -----------------------------------------------------------

    def _summarize(self, turn: int, trigger_name: str) -> None:
        prompt_tokens = self.sink.last_prompt_tokens
        try:
            recap, _ = handoff.summarize(self._summarize_generate(turn), self.system_prompt, self.wire,
                                         self.config.summarize_policy)
        except handoff.SummarizerFailedError as exc:
            raise Terminal(TerminationReason.CONTEXT_WINDOW_EXCEEDED, f"summarise failed: {exc}") from None
        except Terminal:
            raise  # the harness ended it (a spent --max-cost), not the summariser's provider
        except Exception as exc:  # the summariser's own call: a window error is the second loud failure
            if isinstance(exc, UnknownOutputItemError):
                self.recorder.unread("summarize", turn, exc.answer)
            reason = self.classify(exc)
            detail = f"summarise call raised {type(exc).__name__}: {scrub(str(exc), self.recorder.secrets)[:1000]}"
            raise Terminal(reason, detail) from None
        assert self._first_user is not None
        index = self.recorder.marker(
            f"Context summarized before turn {turn} (trigger={trigger_name}, prompt_tokens={prompt_tokens}); "
            "wire history reset.", handoff.SUMMARY_ORIGIN,
        )
        self.recorder.summarize_events.append(SummarizeEvent(
            turn=turn, trigger=trigger_name, prompt_tokens=prompt_tokens,
            recap=recap, message_index=index))
        self.wire = handoff.compacted(self._first_user, recap)
        self.sink.last_prompt_tokens = None  # one summarise per event: the next check needs a new generation

    def _summarize_generate(self, turn: int) -> Generate:
        def generate(request: ChatRequest | dict[str, Any]) -> GenerationResult:
            try:
                with self.sink.sending("summarize", turn):
                    result = self._generate_raw(request)
            except Exception as exc:
                self.sink.failed("summarize", turn, exc, self.route)
                raise
            self.sink.call("summarize", turn, result)
            return result

        return generate


def _not_sent_as_is(call: ToolCall) -> bool:
    """Whether the model's argument text is not the JSON of the arguments the call runs with.

    True for a payload the parser repaired or could not read (coerced to ``{}``), and for arguments
    the response policy changed; compared as JSON text (key order kept), so ``1`` and ``1.0`` differ
    as they do to a grader that reads what was sent. A call with no raw text recorded is taken as sent.
    """
    if not call.raw_arguments:
        return False
    try:
        sent = json.loads(call.raw_arguments)
    except (ValueError, RecursionError):
        return True
    return json.dumps(sent, ensure_ascii=False) != json.dumps(call.arguments, ensure_ascii=False)


def _parse_failed(calls: tuple[ToolCall, ...], errors: tuple[ParserError, ...]) -> set[int]:
    """Indexes of the calls whose arguments were coerced to ``{}``."""
    pending = list(errors)
    failed: set[int] = set()
    for i, call in enumerate(calls):
        for err in pending:
            if err.tool_name == call.name and call.raw_arguments.startswith(err.raw_arguments) and not call.arguments:
                failed.add(i)
                pending.remove(err)
                break
    return failed
