"""The conformance scenarios: conversations that reach every condition a provider rule looks at.

Each scenario has an id, a line saying what it exercises, ``applies(plan, target)`` (``None``, or
why it does not apply to that plan) and ``run(ctx)``. They go through capplan's real path: the
plan's :class:`~capplan.executor.client.Client` (its request builder, policies and transport,
direct or litellm) under the trial runner's :class:`~capplan.trials.loop.tool_loop.ToolCallingLoop`, with the
built-in tools of :mod:`capplan.conformance.scenario_tools`, a scripted user, a recorder and a
metrics sink, exactly as ``trial run`` builds them. A scenario that needs a history another model
or route made (the switches) drives ``Client.generate`` turn by turn instead, building each
assistant turn exactly as the loop does (see :func:`assistant_turn`); its docstring says so.

A request setting the loop does not set itself (temperature 0, an effort level, thinking on or
off) rides on the loop's requests through :class:`Overrides`, applied to each request the loop
hands the client: the loop, the builder and the transport are unchanged.

The emulator answers from a script (:class:`~capplan.conformance.emulator.Reply`): tool calls for
the loop's steps, then a text answer. Every wait is bounded: the loop's turn budget, the tools'
timeouts, the client's own call timeout.
"""

from __future__ import annotations

import json
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, get_args

from pydantic import ValidationError

from capplan.conformance import scenario_tools
from capplan.conformance.carriers import CarrierMint
from capplan.conformance.emulator import Emulator, Exchange, Reply
from capplan.conformance.routes import Target
from capplan.core.errors import UserError
from capplan.executor.client import Client
from capplan.executor.messages import ChatRequest, ReasoningIn
from capplan.executor.plan import LoopKnobs, Plan
from capplan.executor.reasoning import EffortLevel, ReasoningConfig
from capplan.executor.result import GenerationResult
from capplan.trials.loop.classify import classifier
from capplan.trials.loop.tool_loop import LoopConfig, LoopEnd, ToolCallingLoop, WireToolChoice
from capplan.trials.outcome import TerminationReason
from capplan.trials.run_folder.recording import MetricsSink, Recorder
from capplan.trials.tasks.task_code import TaskCodeRunner
from capplan.trials.loop.tool_call_ids import ToolCallIds
from capplan.trials.loop.tools import ToolRunner
from capplan.trials.loop.users import ScriptedUser

SYSTEM = "You are a careful assistant. Use the tools to answer."
#: how long one scenario tool may run (they are pure functions; a bound, never a wait)
TOOL_TIMEOUT_S = 10.0
EFFORTS: tuple[str, ...] = get_args(EffortLevel)


def _nothing(_: float) -> None:
    """The loop's backoff sleep: a refused request is never replayed, and nothing else waits here."""


# --- what a scenario is handed and what it hands back -----------------------------------------------


@dataclass
class ScenarioContext:
    """One plan's run of one scenario: its client on the route's emulator, and how to make others."""

    plan: Plan
    target: Target
    emulator: Emulator
    #: a client for ``plan`` (or another plan) sending to ``base_url`` (the runner's dummy credentials)
    make_client: Callable[[Plan, str], Client]
    #: a second emulator of the same protocol and route with a mint of its own (another upstream)
    start_other_emulator: Callable[[CarrierMint], Emulator]
    #: the other emulators this run started (the runner stops them and reads their exchanges)
    others: list[Emulator] = field(default_factory=list)
    _client: Client | None = None

    @property
    def client(self) -> Client:
        if self._client is None:
            self._client = self.make_client(self.plan, self.emulator.base_url)
        return self._client


@dataclass
class ScenarioRun:
    """What happened: how the conversation ended, capplan's own refusal, and notes for the report."""

    end: str = "completed"
    #: capplan refused the request before anything was sent (a value rule, a capability gate): the text
    refused: str | None = None
    #: something went wrong that is neither a provider rule nor capplan's refusal (a harness or parse error)
    error: str | None = None
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Overrides:
    """Request settings put on every request the loop hands the client (the loop sets none of them)."""

    temperature: float | None = None
    reasoning: ReasoningConfig | None = None

    def apply(self, request: ChatRequest | dict[str, Any]) -> ChatRequest | dict[str, Any]:
        update: dict[str, Any] = {}
        if self.temperature is not None:
            update["temperature"] = self.temperature
        if self.reasoning is not None:
            update["reasoning"] = self.reasoning
        if not update:
            return request
        if isinstance(request, ChatRequest):
            return request.model_copy(update=update)
        return {**request, **{k: (v.model_dump(mode="json") if isinstance(v, ReasoningConfig) else v)
                              for k, v in update.items()}}


class _Generate:
    """The loop's ``generate``: the client's, with overrides, remembering capplan's own refusals.

    A :class:`~capplan.core.errors.UserError` raised while the emulator saw no new request is
    capplan refusing before sending (the plan's value rules, its capability gates); anything
    else raised is the provider's answer (the emulator recorded it) or a fault the run reports.
    """

    def __init__(self, client: Client, emulator: Emulator, overrides: Overrides) -> None:
        self.client, self.emulator, self.overrides = client, emulator, overrides
        self.refused: str | None = None
        self.failure: str | None = None

    def __call__(self, request: ChatRequest | dict[str, Any]) -> GenerationResult:
        before = len(self.emulator.exchanges)
        try:
            return self.client.generate(self.overrides.apply(request), role="agent")
        except UserError as exc:
            if len(self.emulator.exchanges) == before:
                self.refused = self.refused or str(exc).splitlines()[0]
            else:
                self.failure = self.failure or f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
            raise
        except Exception as exc:
            if len(self.emulator.exchanges) == before:
                self.failure = self.failure or f"{type(exc).__name__}: {str(exc)[:300]}"
            raise


# --- the two ways of driving a conversation ----------------------------------------------------------


def run_loop(ctx: ScenarioContext, *, turns: Sequence[str], replies: Sequence[Reply],
             tools: Sequence[dict[str, Any]] = scenario_tools.BASIC, tool_choice: WireToolChoice | None = None,
             parallel_tool_calls: bool | None = None, overrides: Overrides = Overrides(),
             knobs: LoopKnobs | None = None, client: Client | None = None) -> tuple[ScenarioRun, ToolCallingLoop]:
    """One conversation through the trial loop, as ``trial run`` builds it, on the scripted emulator."""
    ctx.emulator.script(replies)
    client = client if client is not None else ctx.client
    plan = client.plan
    tool_list = [dict(t) for t in tools]
    recorder, sink = Recorder(), MetricsSink()
    code = TaskCodeRunner(name="conformance-tools")
    names = [t["function"]["name"] for t in tool_list]
    runner = ToolRunner(scenario_tools.method,
                        prepared=client.builder.tool_memo.prepare(json.dumps(tool_list, separators=(",", ":")).encode()),
                        plan_cap=plan.loop.tool_output_max_chars, tool_caps={n: None for n in names},
                        recorder=recorder, code=code, timeouts={n: TOOL_TIMEOUT_S for n in names})
    generate = _Generate(client, ctx.emulator, overrides)
    loop = ToolCallingLoop(
        generate=generate, system_prompt=SYSTEM, tools=tool_list, tool_runner=runner,
        user=ScriptedUser(list(turns)), recorder=recorder, sink=sink,
        # the turn budget bounds the conversation: the script's steps and one spare
        config=LoopConfig(knobs=knobs or plan.loop, max_turns=len(replies) + 1, tool_choice=tool_choice,
                          parallel_tool_calls=parallel_tool_calls),
        sleep=_nothing, classify=classifier(client.classify_loop_error), cancel=threading.Event(),
    )
    try:
        end = loop.run()
    finally:
        code.close()
    return _outcome(end, generate), loop


def _outcome(end: LoopEnd, generate: _Generate) -> ScenarioRun:
    run = ScenarioRun(end=end.reason.value)
    if generate.refused is not None:
        run.refused = generate.refused
    elif generate.failure is not None:
        run.error = generate.failure
    elif end.reason not in (TerminationReason.USER_STOP, TerminationReason.MAX_TURNS, TerminationReason.API_ERROR):
        # a provider's refusal ends the loop api_error or configuration_error; the exchange says which rule
        if end.reason is not TerminationReason.CONFIGURATION_ERROR:
            run.error = f"{end.reason.value}: {end.detail}"[:500]
    return run


def assistant_turn(result: GenerationResult, ids: ToolCallIds) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The assistant message the loop appends for ``result`` (ids, arguments, reasoning), and its tool results.

    Mirrors :meth:`ToolCallingLoop._accept`: the text or ``None``, each call under a fresh id with
    its arguments as JSON, the reasoning as ``ReasoningIn.from_structured`` records it; the tools
    run here directly (pure functions).
    """
    calls = [(call, ids.assign(call.id)) for call in result.tool_calls]
    message: dict[str, Any] = {"role": "assistant", "content": result.text or None}
    if calls:
        message["tool_calls"] = [{"id": new_id, "type": "function",
                                  "function": {"name": call.name, "arguments": json.dumps(call.arguments, ensure_ascii=False)}}
                                 for call, new_id in calls]
    if result.reasoning is not None:
        message["reasoning"] = ReasoningIn.from_structured(result.reasoning).model_dump(mode="json", exclude_none=True)
    results = []
    for call, new_id in calls:
        function = scenario_tools.method(call.name)
        output = str(function(**call.arguments)) if function is not None else f"Error: unknown tool {call.name!r}"
        results.append({"role": "tool", "tool_call_id": new_id, "content": output})
    return message, results


def _turn_by_turn(ctx: ScenarioContext, first: Client, first_emulator: Emulator, second: Client) -> ScenarioRun:
    """A tool-call turn made by ``first`` (on ``first_emulator``), then the answer asked of ``second``."""
    run = ScenarioRun()
    first_emulator.script([Reply(tool_calls=(("lookup", {"key": "alpha"}),))])
    ctx.emulator.script([Reply(text="alpha is 1")] if first_emulator is not ctx.emulator
                        else [Reply(tool_calls=(("lookup", {"key": "alpha"}),)), Reply(text="alpha is 1")])
    request = ChatRequest.model_validate({"system": SYSTEM, "messages": [{"role": "user", "content": "What is alpha?"}],
                                          "tools": list(scenario_tools.BASIC)})
    for client, emulator in ((first, first_emulator), (second, ctx.emulator)):
        generate = _Generate(client, emulator, Overrides())
        try:
            result = generate(request)
        except Exception:
            run.end = "provider_error" if generate.refused is None and generate.failure is None else "error"
            run.refused, run.error = generate.refused, generate.failure
            return run
        if client is first:
            message, results = assistant_turn(result, ToolCallIds())
            if not result.tool_calls:
                run.error = "the first model's turn made no tool call (the emulator's script was not followed)"
                return run
            request = request.extended([message, *results])
    return run


# --- the catalogue -------------------------------------------------------------------------------------


def _reasons(plan: Plan) -> bool:
    """Whether the plan's model has reasoning to turn on (its codec replays some)."""
    return plan.policies["reasoning_codec"].name != "none"


def _thinking_on(plan: Plan) -> ReasoningConfig:
    """The plan's own reasoning when it thinks by default, else adaptive at medium effort."""
    default = plan.request_defaults.reasoning
    if default is not None and default.mode != "off":
        return default
    return ReasoningConfig(mode="adaptive", effort_hint="medium")


def _calls(*pairs: tuple[str, dict[str, Any]]) -> Reply:
    return Reply(tool_calls=tuple(pairs))


class Scenario(ABC):
    """One conversation shape."""

    id: str
    exercises: str

    def applies(self, plan: Plan, target: Target) -> str | None:
        """``None`` when the scenario runs for ``plan``, else why not."""
        return None

    @abstractmethod
    def run(self, ctx: ScenarioContext) -> ScenarioRun:
        """Run it against ``ctx``'s emulator."""


class ToolLoop(Scenario):
    """Three tool-calling steps in one user turn, then the answer: replay of every step of the loop."""

    id = "tool_loop"
    exercises = "a tool loop of 3 steps in one user turn (reasoning replayed on every step)"

    def run(self, ctx: ScenarioContext) -> ScenarioRun:
        return run_loop(ctx, turns=["Add alpha and beta, then look up gamma."], replies=[
            _calls(("lookup", {"key": "alpha"})), _calls(("lookup", {"key": "beta"})),
            _calls(("add", {"a": 1, "b": 2})), Reply(text="3, and gamma is 3")])[0]


class ParallelCalls(Scenario):
    """Two calls in one completion, both answered before the next request."""

    id = "parallel_calls"
    exercises = "parallel tool calls in one assistant turn"

    def run(self, ctx: ScenarioContext) -> ScenarioRun:
        return run_loop(ctx, turns=["Look up alpha and beta."], replies=[
            _calls(("lookup", {"key": "alpha"}), ("lookup", {"key": "beta"})), Reply(text="1 and 2")])[0]


class TwoUserTurns(Scenario):
    """A tool step and an answer in each of two user turns: the first turn's reasoning is history."""

    id = "two_user_turns"
    exercises = "two user turns, each with a tool step"

    def run(self, ctx: ScenarioContext) -> ScenarioRun:
        return run_loop(ctx, turns=["What is alpha?", "And beta?"], replies=[
            _calls(("lookup", {"key": "alpha"})), Reply(text="alpha is 1"),
            _calls(("lookup", {"key": "beta"})), Reply(text="beta is 2")])[0]


class Thinking(Scenario):
    """The tool loop with reasoning explicitly on (the plan's own setting, or adaptive medium) or off."""

    def __init__(self, on: bool) -> None:
        self.on = on
        self.id = "thinking_on" if on else "thinking_off"
        self.exercises = ("thinking on: reasoning carriers minted and replayed across tool steps" if on else
                          "thinking off: history reasoning must not reach the provider as thinking")

    def applies(self, plan: Plan, target: Target) -> str | None:
        if self.on and not _reasons(plan):
            return "the plan's model does not reason (reasoning codec none)"
        return None

    def run(self, ctx: ScenarioContext) -> ScenarioRun:
        config = _thinking_on(ctx.plan) if self.on else ReasoningConfig(mode="off")
        return run_loop(ctx, turns=["What is alpha plus beta?"], overrides=Overrides(reasoning=config), replies=[
            _calls(("lookup", {"key": "alpha"})), _calls(("lookup", {"key": "beta"})), Reply(text="3")])[0]


class ModelSwitch(Scenario):
    """History made by another model on the same route, then this plan's model asked to go on.

    Driven turn by turn through ``Client.generate`` (the loop has one client): the first turn is
    made by a client of this plan with the model renamed (``<model>-previous``, same route, same
    emulator, so its carriers are minted for that other model), built into history exactly as the
    loop records it, and the next request is this plan's.
    """

    id = "model_switch"
    exercises = "a model switch mid-conversation (carriers minted for another model on the same route)"

    def run(self, ctx: ScenarioContext) -> ScenarioRun:
        other = other_model(ctx.plan)
        first = ctx.make_client(other, ctx.emulator.base_url)
        return _turn_by_turn(ctx, first, ctx.emulator, ctx.client)


class RouteSwitch(Scenario):
    """History made on another route (a second emulator, its own mint), then this route asked to go on.

    Driven turn by turn through ``Client.generate``: the first turn is made by this plan under
    another route's name (``<route>-previous``, as a plan of another binding records it) on a
    second emulator of the same protocol whose carriers are minted under another key and route
    name (another upstream), the next by this plan on its own emulator.
    """

    id = "route_switch"
    exercises = "a route switch mid-conversation (carriers minted by another upstream)"

    def run(self, ctx: ScenarioContext) -> ScenarioRun:
        other = ctx.start_other_emulator(CarrierMint(f"{ctx.target.route}~another-upstream"))
        first = ctx.make_client(other_route(ctx.plan), other.base_url)
        return _turn_by_turn(ctx, first, other, ctx.client)


class ContextHandoff(Scenario):
    """The loop's context handoff: a summary request, then the conversation goes on from the recap.

    The plan's loop knobs are armed for this run only (a 1-token window, so the watermark is passed
    after the first step); the handoff needs the provider's prompt token count, so an emulator
    that reports none is noted and no summary happens.
    """

    id = "context_handoff"
    exercises = "a context handoff (summary request, then the compacted history)"

    def run(self, ctx: ScenarioContext) -> ScenarioRun:
        knobs = ctx.plan.loop.model_copy(update={"max_context_tokens": 1, "context_watermark": 1})
        run, loop = run_loop(ctx, turns=["What is alpha?"], knobs=knobs, replies=[
            _calls(("lookup", {"key": "alpha"})), Reply(text="The user asked for alpha; lookup said 1."),
            Reply(text="alpha is 1")])
        if not loop.recorder.summarize_events and run.refused is None and run.error is None:
            run.notes.append("no handoff happened: the emulator reported no prompt token count")
        return run


class CacheMarkers(Scenario):
    """Cache markers on a long conversation, counted against the provider's breakpoint limit.

    capplan's request format takes no caller markers: a ``cache_control`` key on a message is
    refused when the request is read (checked here, and noted), so every marker on the wire is the
    plan's cache policy's, placed on two user turns of tool steps.
    """

    id = "cache_markers"
    exercises = "cache markers on system, tools and history (the caller's are refused; the plan's counted)"

    def applies(self, plan: Plan, target: Target) -> str | None:
        if plan.policies["cache_policy"].name == "none":
            return "the plan places no cache markers (cache_policy none) and capplan takes none from the caller"
        return None

    def run(self, ctx: ScenarioContext) -> ScenarioRun:
        marked = {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}
        try:
            ChatRequest.model_validate({"messages": [marked]})
            refused = "accepted (unexpected)"
        except ValidationError:
            refused = "refused when the request is read"
        run = run_loop(ctx, turns=["What is alpha?", "And beta?"], replies=[
            _calls(("lookup", {"key": "alpha"})), Reply(text="1"), _calls(("lookup", {"key": "beta"})), Reply(text="2")])[0]
        run.notes.append(f"a caller's cache_control marker: {refused}")
        return run


class ToolSchemas(Scenario):
    """A tool whose schema has `additionalProperties`, `$schema`, `const`, `propertyNames`, `anyOf` and `$ref`."""

    id = "tool_schemas"
    exercises = "tool schemas with additionalProperties, $schema, const, propertyNames, anyOf and $ref"

    def run(self, ctx: ScenarioContext) -> ScenarioRun:
        return run_loop(ctx, turns=["Book a flight for Ada."], tools=[scenario_tools.BOOK], replies=[
            _calls(("book", {"kind": "flight", "who": {"name": "Ada"}, "when": "2026-01-02"})),
            Reply(text="booked")])[0]


class TemperatureZero(Scenario):
    """Temperature 0 on every request of a tool loop."""

    id = "temperature_zero"
    exercises = "temperature 0"

    def run(self, ctx: ScenarioContext) -> ScenarioRun:
        return run_loop(ctx, turns=["What is alpha?"], overrides=Overrides(temperature=0.0), replies=[
            _calls(("lookup", {"key": "alpha"})), Reply(text="1")])[0]


class Effort(Scenario):
    """One effort level on every request of a tool loop (capplan may refuse it before sending: noted)."""

    def __init__(self, level: str) -> None:
        self.level = level
        self.id = f"effort_{level}"
        self.exercises = f"reasoning effort {level}"

    def applies(self, plan: Plan, target: Target) -> str | None:
        if not _reasons(plan):
            return "the plan's model does not reason (reasoning codec none)"
        return None

    def run(self, ctx: ScenarioContext) -> ScenarioRun:
        config = ReasoningConfig(mode="adaptive", effort_hint=self.level)
        return run_loop(ctx, turns=["What is alpha?"], overrides=Overrides(reasoning=config), replies=[
            _calls(("lookup", {"key": "alpha"})), Reply(text="1")])[0]


class ToolChoice(Scenario):
    """One ``tool_choice`` form on every request of the loop."""

    def __init__(self, form: str) -> None:
        self.form = form
        self.id = f"tool_choice_{form}"
        self.exercises = f"tool_choice {form}" + (" (a named function)" if form == "named" else "")

    def run(self, ctx: ScenarioContext) -> ScenarioRun:
        choice: WireToolChoice = ({"type": "function", "function": {"name": "lookup"}} if self.form == "named"
                                  else self.form)
        replies = ([Reply(text="I will answer without tools.")] if self.form == "none"
                   else [_calls(("lookup", {"key": "alpha"})), Reply(text="1")])
        return run_loop(ctx, turns=["What is alpha?"], tool_choice=choice, replies=replies)[0]


def other_model(plan: Plan) -> Plan:
    """``plan`` for another model of the same route: the model's names with ``-previous`` added."""
    model = plan.model
    renamed = model.model_copy(update={"wire_model": model.wire_model + "-previous", "name": model.name + "-previous",
                                       "model_id": model.model_id + "-previous"})
    return plan.model_copy(update={"model": renamed})


def other_route(plan: Plan) -> Plan:
    """``plan`` as a plan of another route records its reasoning: the binding key with ``-previous`` added."""
    key = f"{plan.binding.key or plan.model.provider}-previous"
    return plan.model_copy(update={"binding": plan.binding.model_copy(update={"key": key})})


SCENARIOS: tuple[Scenario, ...] = (
    ToolLoop(), ParallelCalls(), TwoUserTurns(), Thinking(on=True), Thinking(on=False), ModelSwitch(), RouteSwitch(),
    ContextHandoff(), CacheMarkers(), ToolSchemas(), TemperatureZero(),
    *(Effort(level) for level in EFFORTS),
    *(ToolChoice(form) for form in ("auto", "required", "none", "named")),
)

BY_ID: Mapping[str, Scenario] = {scenario.id: scenario for scenario in SCENARIOS}


def exchanges_of(emulators: Sequence[Emulator], starts: Sequence[int]) -> list[Exchange]:
    """The exchanges each emulator recorded since ``starts`` (one start per emulator), in emulator order."""
    out: list[Exchange] = []
    for emulator, start in zip(emulators, starts):
        out += emulator.exchanges[start:]
    return out
