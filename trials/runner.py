"""``run_trial(spec) -> TrialRecords``: one whole trial, from a pure spec to plain records.

This is the function every backend calls (see ``capplan.trials.spec`` for the contract). It never
writes the run folder and never raises for anything a trial can do: provider failures,
environment bugs, refused user replies and harness defects all come back as records with a
typed termination reason.

Task code -- the environment's construction and setup, its tools, reading its state, the
graders -- runs on the trial's task-code worker (:mod:`capplan.trials.tasks.task_code`): whatever it
raises, ``SystemExit`` and ``KeyboardInterrupt`` included, is that trial's recorded error (a
tool's is the agent's ``Error:`` result), and a call that hangs ends at its timeout.

After a tool call times out, the trial goes on with the same environment instances: later calls
run on them (on a fresh worker) while the timed-out call, if it never returns, keeps running
alone in the background and may still change them; the state checkpoints read whatever the
instances hold then. A call still running when the trial ends is marked ``running_at_end`` on its
tool-call record, and its late result, if any, is discarded.

Per process, a :class:`RunContext` caches what trials share: verified plans, one client per
plan (shared by all of that plan's trials, as the executor's client is thread-safe), and
loaded task files. ``run_trial(spec)`` uses the process-wide default context, so a remote
worker needs nothing but the spec.
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from capplan.executor.client import Client, Completion
from capplan.executor.plan import Plan, verify_fingerprint
from capplan.executor.probe import RateLimitProbeConfig
from capplan.executor.probe_stats import ProbeStats
from capplan.executor.result import GenerationResult, ToolCall
from capplan.trials.usersim import SIMULATOR_SCHEMA_VERSION, GuardEvent, UserTools
from capplan.trials.usersim.failures import user_simulator_failure
from capplan.trials.grading.graders import grade, verdict_for
from capplan.trials.tasks.environment import TrialEnvironment
from capplan.trials.loop.handoff import DEFAULT_SUMMARIZER, SummarizePolicy
from capplan.trials.loop.tool_loop import LoopConfig, LoopEnd, ToolCallingLoop, WireToolChoice
from capplan.trials.terminal import Terminal
from capplan.trials.outcome import (USER_ENDS, FinalAnswer, TerminationReason, TrialStatus, counts_against_model,
                                   status_for, unaccepted_end)
from capplan.trials.run_folder.recording import MetricsSink, Recorder, retries_by_class, scrub, secret_values
from capplan.trials.run_folder.costs import known_cost, known_part, line_usage, rounded_calls, total_tokens
from capplan.trials.run_folder.records import (
    Grade,
    Metrics,
    RunLine,
    Termination,
    Trajectory,
    TrialIdentity,
    TurnCheckpoint,
    UserSimulatorFailureRecord,
    record_json,
)
from capplan.trials.spec import TrialRecords, TrialSpec
from capplan.trials.tasks.task_code import (
    DEFAULT_TIMEOUT_S,
    TaskCodeCancelled,
    TaskCodeFailed,
    TaskCodeRunner,
    TaskCodeTimedOut,
)
from capplan.trials.tasks.loading import LoadedTask, load_task_text
from capplan.trials.tasks.taskfile import LlmUser as LlmUserConfig
from capplan.trials.tasks.taskfile import NamedToolChoice, TaskFile
from capplan.trials.loop.tools import ToolRunner, tool_call_what
from capplan.trials.loop.turn_budget import resolve_max_turns
from capplan.trials.loop.users import LlmUser, ScriptedUser, UserAdapter
from capplan.trials.loop.classify import classifier


#: Seconds the task's graders may take together: they may replay a benchmark's ground truth.
GRADING_TIMEOUT_S = 300.0


class _TrialEnds(Exception):
    """The trial ends here, before or after its conversation, with this end."""

    def __init__(self, end: LoopEnd) -> None:
        super().__init__(end.detail)
        self.end = end


def applied_choices(task: TaskFile, choices: dict[str, Any] | None) -> TaskFile:
    """The task with the run config's ``trials:`` choices in place of its own (those set win)."""
    if not choices:
        return task
    update: dict[str, Any] = {}
    if choices.get("tool_choice") is not None:
        choice = choices["tool_choice"]
        update["tool_choice"] = NamedToolChoice(name=choice["name"]) if isinstance(choice, dict) else choice
    for name in ("parallel_tool_calls", "tool_timeout_s"):
        if choices.get(name) is not None:
            update[name] = choices[name]
    return task.model_copy(update=update) if update else task


def task_code_timeout(task: TaskFile) -> float:
    """The timeout of the task's code outside its tools (construction, setup, state): the task's tool timeout."""
    return task.tool_timeout_s if task.tool_timeout_s is not None else DEFAULT_TIMEOUT_S


def tool_timeouts(task: TaskFile) -> dict[str, float]:
    """Each tool's timeout: its own ``timeout_s``, else the task's ``tool_timeout_s``, else the default."""
    base = task_code_timeout(task)
    return {t.name: t.timeout_s if t.timeout_s is not None else base for t in task.tools}


def wire_tool_choice(choice: str | NamedToolChoice | None) -> WireToolChoice | None:
    """The task's ``tool_choice`` as a request carries it (a named tool is OpenAI's function form)."""
    if isinstance(choice, NamedToolChoice):
        return {"type": "function", "function": {"name": choice.name}}
    return choice


def plan_from_text(text: str, fingerprint: str) -> Plan:
    """A plan carried in a spec, verified against its own fingerprint and the spec's."""
    data = json.loads(text)
    verify_fingerprint(Path("<trial spec plan>"), data)
    plan = Plan.model_validate(data)
    if plan.fingerprint != fingerprint:
        raise ValueError(f"plan fingerprint {plan.fingerprint[:12]}… does not match the spec's {fingerprint[:12]}…")
    return plan


class RunContext:
    """What one process's trials share; thread-safe."""

    def __init__(
        self,
        *,
        sleep: Callable[[float], None] = time.sleep,
        cancel: threading.Event | None = None,
        completion: Completion | None = None,
        completion_for: Callable[[Plan], Completion] | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        summarize_policy: SummarizePolicy = DEFAULT_SUMMARIZER,
    ) -> None:
        """``completion_for`` builds a plan's completion function (the Ray worker's limiter gate needs
        the plan's provider and key); it wins over ``completion``. ``clock`` (the probe's per-call
        budget) and ``wall_clock`` (telemetry windows) go to every client, beside ``sleep``."""
        self.sleep = sleep
        self.summarize_policy = summarize_policy  # the context handoff's recap writer, for every trial here
        self.clock = clock
        self.wall_clock = wall_clock
        self.cancel = cancel
        self.completion = completion
        self.completion_for = completion_for
        self._lock = threading.Lock()
        self._clients: dict[tuple[str, str | None, str], Client] = {}
        self._tasks: dict[tuple[str, str], LoadedTask] = {}

    def client(self, plan_json: str, fingerprint: str, api_base: str | None,
               probe: RateLimitProbeConfig | None = None) -> Client:
        key = (fingerprint, api_base, probe.model_dump_json() if probe is not None else "")
        with self._lock:
            hit = self._clients.get(key)
        if hit is not None:
            return hit
        plan = plan_from_text(plan_json, fingerprint)
        completion = self.completion_for(plan) if self.completion_for is not None else self.completion
        client = Client(plan, completion=completion, sleep=self.sleep, api_base=api_base, rate_limit_probe=probe,
                        clock=self.clock, wall_clock=self.wall_clock)
        with self._lock:
            return self._clients.setdefault(key, client)

    def task(self, spec: TrialSpec) -> LoadedTask:
        key = (spec.task_path, spec.task_sha256)
        with self._lock:
            hit = self._tasks.get(key)
        if hit is not None:
            return hit
        loaded = load_task_text(spec.task_text, spec.task_path)
        with self._lock:
            return self._tasks.setdefault(key, loaded)


_DEFAULT: RunContext | None = None
_DEFAULT_LOCK = threading.Lock()


def default_context() -> RunContext:
    """The process-wide context ``run_trial`` uses when none is given."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = RunContext()
        return _DEFAULT


def run_trial(spec: TrialSpec, context: RunContext | None = None) -> TrialRecords:
    """Run one trial and return its records; never writes files, never raises for a trial's failure."""
    return _Trial(spec, context or default_context()).run()


def _route_of(client: Client) -> tuple[str | None, str | None]:
    """The client's gateway route and kind, for the records of attempts that raised (they have no result)."""
    route = client.route
    return (route.route, route.kind) if route is not None else (None, None)


class _Trial:
    def __init__(self, spec: TrialSpec, context: RunContext) -> None:
        self.spec = spec
        self.context = context
        self.started = time.monotonic()
        self.recorder = Recorder()
        self.sink = MetricsSink()
        self.plan: Plan | None = None
        self.task: LoadedTask | None = None
        self.max_turns = 0
        self.state: dict[str, Any] | None = None
        self.state_error: str | None = None
        self.checkpoints: list[TurnCheckpoint] = []
        # the user's own side (dual control): its environment, once built, and the records of its tool calls
        self.env: TrialEnvironment | None = None
        self.user_recorder = Recorder()
        self.user_state: dict[str, Any] | None = None
        # what the pass rule reads (outcome.unaccepted_end): the agent's last text answer, and who the user is
        self.final_answer: FinalAnswer | None = None
        self.simulated_user = False
        self.code = TaskCodeRunner(cancel=context.cancel, name=f"task-code {spec.trial_id}")
        self.probe = RateLimitProbeConfig.model_validate(spec.rate_limit_probe) if spec.rate_limit_probe else None
        # one census per trial, returned with its records: the driver sums trials wherever they ran
        self.probe_stats = (ProbeStats(bucket_width_s=self.probe.bucket_width_s, max_buckets=self.probe.max_buckets)
                            if self.probe is not None and self.probe.enabled else None)

    def run(self) -> TrialRecords:
        try:
            try:
                end = self._converse()
            except _TrialEnds as stop:
                end = stop.end
            except Exception as exc:  # a harness defect must still leave a record, never kill the run
                end = LoopEnd(TerminationReason.ERROR, 0,
                              f"{type(exc).__name__}: {scrub(str(exc), self.recorder.secrets)[:1000]}")
            self._mark_still_running()
            try:
                return self._records(end)
            except Exception as exc:  # e.g. a record that does not validate: the trial still leaves one
                detail = f"recording the trial failed: {type(exc).__name__}: {scrub(str(exc), self.recorder.secrets)[:1000]}"
                # what the task's code produced is the likeliest culprit: the error record goes without it
                self.state, self.state_error, self.checkpoints = None, "not recorded: " + detail, []
                return self._records(LoopEnd(TerminationReason.ERROR, end.turns, detail), graded=False)
        finally:
            self.code.close()

    def _mark_still_running(self) -> None:
        """A tool call that timed out and has not returned yet is recorded as still running."""
        running = set(self.code.abandoned_running())
        calls = self.recorder.tool_calls
        for i, call in enumerate(calls):
            if call.error == "timeout":
                calls[i] = call.model_copy(update={"running_at_end": tool_call_what(call.name, call.id) in running})

    def _create_environment(self, loaded: LoadedTask, timeout_s: float) -> TrialEnvironment:
        """A fresh set of the task's components, built and set up on the task-code worker."""
        refs = ", ".join(c.ref for c in loaded.task.components)
        try:
            return self.code.call(f"building the environment ({refs})", TrialEnvironment.create, loaded,
                                  timeout_s=timeout_s)
        except (TaskCodeFailed, TaskCodeTimedOut) as exc:
            raise _TrialEnds(LoopEnd(TerminationReason.ERROR, 0, scrub(str(exc), self.recorder.secrets)[:2000])) from None
        except TaskCodeCancelled:
            raise _TrialEnds(LoopEnd(TerminationReason.INTERRUPTED, 0, "the run was interrupted")) from None

    def _read_state(self, env: TrialEnvironment, timeout_s: float) -> tuple[dict[str, Any] | None, str | None]:
        """The environment's state, or why it could not be read (raises TaskCodeCancelled)."""
        try:
            return self.code.call("reading the state", env.state, timeout_s=timeout_s), None
        except TaskCodeFailed as exc:
            # a StateEncodingError names its component and attribute; anything else, what raised
            text = exc.message if exc.kind == "StateEncodingError" else str(exc)
            return None, scrub(text, self.recorder.secrets)[:2000]
        except TaskCodeTimedOut as exc:
            return None, str(exc)

    def _converse(self) -> LoopEnd:
        spec, ctx = self.spec, self.context
        client = ctx.client(spec.plan_json, spec.plan_fingerprint, spec.api_base, self.probe)
        self.plan = plan = client.plan
        binding = plan.binding.binding
        self.recorder.secrets = secret_values((binding.api_key_env,))
        self.task = loaded = ctx.task(spec)
        task = applied_choices(loaded.task, spec.trial_choices)
        self.max_turns = resolve_max_turns(task.max_turns, spec.max_turns_cap, plan.loop.default_max_turns)
        user = self._user()
        env = self.env = self._create_environment(loaded, task_code_timeout(task))
        tools = task.tool_specs()
        prepared = client.builder.tool_memo.prepare(json.dumps(tools, separators=(",", ":")).encode("utf-8"))
        runner = ToolRunner(env.method, prepared=prepared, plan_cap=plan.loop.tool_output_max_chars,
                            tool_caps={t.name: t.output_max_chars for t in task.tools}, recorder=self.recorder,
                            code=self.code, timeouts=tool_timeouts(task), argument_validation=task.argument_validation)
        state_timeout = task_code_timeout(task)
        loop = ToolCallingLoop(
            generate=functools.partial(client.generate, role="agent", probe_stats=self.probe_stats),
            system_prompt=task.system_prompt, tools=tools, tool_runner=runner,
            user=user, recorder=self.recorder, sink=self.sink,
            config=LoopConfig(knobs=plan.loop, max_turns=self.max_turns, max_steps_per_turn=task.max_steps_per_turn,
                              tool_choice=wire_tool_choice(task.tool_choice),
                              parallel_tool_calls=task.parallel_tool_calls, summarize_policy=ctx.summarize_policy),
            sleep=ctx.sleep, classify=classifier(client.classify_loop_error), cancel=ctx.cancel,
            route=_route_of(client),
            tool_from_turn={t.name: t.available_from_turn for t in task.tools if t.available_from_turn},
            read_state=lambda: self._read_state(env, state_timeout),
        )
        end = loop.run()
        self.checkpoints = loop.checkpoints
        self.final_answer, self.simulated_user = loop.final_answer, isinstance(user, LlmUser)
        if end.reason is TerminationReason.INTERRUPTED:
            return end
        last = loop.checkpoints[-1] if loop.checkpoints else None
        if last is not None and loop.calls_since_checkpoint() == 0:
            self.state, self.state_error = last.state, last.state_error  # nothing ran since: the same state
        else:
            try:
                self.state, self.state_error = self._read_state(env, state_timeout)
            except TaskCodeCancelled:
                return LoopEnd(TerminationReason.INTERRUPTED, end.turns, "the run was interrupted")
        if env.user_instances:
            try:
                self.user_state = self.code.call("reading the user's state", env.user_state, timeout_s=state_timeout)
            except (TaskCodeFailed, TaskCodeTimedOut):
                self.user_state = None  # informational: the agent's state and the graders do not depend on it
            except TaskCodeCancelled:
                return LoopEnd(TerminationReason.INTERRUPTED, end.turns, "the run was interrupted")
        return end

    def _user_tools(self, task: TaskFile, client: Client, adapter: Callable[[], LlmUser]) -> UserTools | None:
        """The user's own tools (dual control): each call runs on the user's components, on the task-code worker,
        recorded apart from the agent's (``user_tool_calls``, requestor user) with its own timeouts and caps."""
        if not task.user_tools:
            return None
        specs = task.user_tool_specs()
        prepared = client.builder.tool_memo.prepare(json.dumps(specs, separators=(",", ":")).encode("utf-8"))
        base = task_code_timeout(task)
        caps = {t.name: t.output_max_chars for t in task.user_tools}
        timeouts = {t.name: t.timeout_s if t.timeout_s is not None else base for t in task.user_tools}
        records = self.user_recorder

        def run(name: str, arguments: dict[str, Any], call_id: str, message_index: int) -> str:
            env = self.env
            if env is None:  # pragma: no cover - the environment is built before the user speaks
                raise ValueError("the user's environment is not built")
            records.secrets = self.recorder.secrets
            runner = ToolRunner(env.user_method, prepared=prepared, plan_cap=None, tool_caps=caps, recorder=records,
                                code=self.code, timeouts=timeouts, argument_validation=task.argument_validation)
            call = ToolCall(id=call_id, name=name, arguments=arguments, raw_arguments=json.dumps(arguments))
            # checked against the schema as the parser never did (a user call's arguments are what the model sent)
            content = runner.run(call, call_id, adapter().user_turn, True, ())
            records.tool_calls[-1] = records.tool_calls[-1].model_copy(
                update={"requestor": "user", "before_message": message_index})
            return content

        return UserTools(schemas=specs, run=run, max_steps=task.user.max_tool_steps
                         if isinstance(task.user, LlmUserConfig) else 1)

    def _user(self) -> UserAdapter:
        assert self.task is not None
        user = self.task.task.user
        if not isinstance(user, LlmUserConfig):
            return ScriptedUser(user.turns)
        spec = self.spec
        if spec.user_plan_json is None or spec.user_plan_fingerprint is None:
            raise ValueError(f"task {self.task.task.id!r} has an llm user but the run has no user plan")
        client = self.context.client(spec.user_plan_json, spec.user_plan_fingerprint, spec.user_api_base, self.probe)
        classify = classifier(client.classify_loop_error)
        route = _route_of(client)

        def generate(request: dict[str, Any], user_turn: int) -> GenerationResult:
            try:
                with self.sink.sending("user", user_turn):
                    result = client.generate(request, role="user", probe_stats=self.probe_stats)
            except Terminal as exc:
                self.sink.failed("user", user_turn, exc, route)
                raise  # the harness ended it (a spent --max-cost): not the simulator's provider
            except Exception as exc:
                self.sink.failed("user", user_turn, exc, route)
                reason = classify(exc)
                # the user simulator is our harness: its provider's failure is never the agent's
                if reason in (TerminationReason.API_ERROR, TerminationReason.CONTEXT_WINDOW_EXCEEDED):
                    reason = TerminationReason.ERROR
                raise Terminal(reason, f"user simulator call: {type(exc).__name__}: "
                                              f"{scrub(str(exc), self.recorder.secrets)[:1000]}") from exc
            self.sink.call("user", user_turn, result)
            return result

        def on_guard_event(event: GuardEvent) -> None:
            self.recorder.guard_events.append(event.to_record())
            count = len(event.rejections)
            # one answered attempt per generation the guard judged (failed attempts were retried)
            user_calls = [c for c in self.sink.calls if c.role == "user" and c.status == "ok"]
            rejected = user_calls[-count:] if event.outcome in ("refused", "provider_failed") else user_calls[-count - 1:-1]
            for call in rejected:
                call.outcome = "guard_rejected"

        made: list[LlmUser] = []
        adapter = LlmUser(generate, trial_id=spec.trial_id, backstory=user.backstory,
                          initial_message=user.initial_message, on_guard_event=on_guard_event,
                          stop_signals={text: TerminationReason(reason) for text, reason in user.stop_signals.items()},
                          tools=self._user_tools(self.task.task, client, lambda: made[0]))
        made.append(adapter)
        return adapter

    def _records(self, end: LoopEnd, *, graded: bool = True) -> TrialRecords:
        spec = self.spec
        status = status_for(end.reason)
        identity = TrialIdentity(
            key=str(spec.key), plan_key=spec.plan_key, plan_fingerprint=spec.plan_fingerprint,
            effective_preset=self.plan.effective_preset if self.plan else "unknown",
            user_plan_fingerprint=spec.user_plan_fingerprint, task_id=spec.task_id, task_pack=spec.task_pack,
            task_path=spec.recorded_task_path, task_sha256=spec.task_sha256, index=spec.index,
        )
        task = self.task.task if self.task else None
        termination = Termination(reason=end.reason, status=status, detail=scrub(end.detail, self.recorder.secrets),
                                  turns=end.turns, max_turns=self.max_turns)
        rec = self.recorder
        trajectory = Trajectory(
            trial=identity,
            simulator_schema_version=SIMULATOR_SCHEMA_VERSION if task and task.user.mode == "llm" else None,
            system_prompt=task.system_prompt if task else "", tools=task.tool_specs() if task else [],
            effective_system_prompt=self.sink.effective_system_prompt,
            messages=rec.messages, tool_calls=rec.tool_calls, retries=rec.retries,
            summarize_events=rec.summarize_events, user_reply_guard_events=rec.guard_events,
            value_substitutions=rec.value_substitutions, parser_errors=rec.parser_errors,
            schema_violations=rec.schema_violations, unread_output=rec.unread_output,
            final_state=self.state, final_state_error=self.state_error,
            user_tools=task.user_tool_specs() if task else [], user_tool_calls=self.user_recorder.tool_calls,
            final_user_state=self.user_state,
            checkpoints=self.checkpoints, metadata=task.metadata if task else {}, termination=termination,
        )
        trajectory_data = trajectory.model_dump(mode="json")
        sink = self.sink
        if graded:
            verdict, failed = self._grade(task, status, end, trajectory_data)
        else:
            verdict, failed = Grade(passed=None if task is None or task.grader is None else False,
                                    note="not graded: the trial's records could not be made"), None
        if failed is not None:
            # grader code that raised, hung or was interrupted: the trial's own error, in every record
            end = failed
            status = status_for(end.reason)
            termination = Termination(reason=end.reason, status=status, turns=end.turns, max_turns=self.max_turns,
                                      detail=scrub(end.detail, self.recorder.secrets))
            trajectory_data["termination"] = termination.model_dump(mode="json")
        failure = self._user_failure(task, end, trajectory_data)
        counted = counts_against_model(status) and failure is None
        usage = sink.usage("agent", "summarize")
        user_usage = sink.usage("user")
        agent_cost, user_cost = known_cost(sink.calls, ("agent", "summarize")), known_cost(sink.calls, ("user",))
        # an unknown total still has a known part: the spend of the calls whose cost is known
        parts = {"cost_known_usd": None if agent_cost is not None else known_part(sink.calls, ("agent", "summarize")),
                 "user_cost_known_usd": None if user_cost is not None else known_part(sink.calls, ("user",))}
        if any(c.role == "judge" for c in sink.calls):  # a grader asked the judge: what that is known to have cost
            parts["judge_cost_usd"] = round(sink.cost("judge"), 9)
        metrics = Metrics(**parts,
            trial=identity, status=status, termination_reason=end.reason,
            counts_against_model=counted, user_simulator_failure=failure, turns=end.turns, max_turns=self.max_turns,
            usage=usage, user_usage=user_usage, cost_usd=agent_cost,
            cost_source=sink.cost_source("agent", "summarize"),
            user_cost_usd=user_cost, user_cost_source=sink.cost_source("user"), n_calls=len(sink.calls),
            calls=rounded_calls(sink.calls), latency_s=sink.latency(), wait_s=sink.wait(),
            openrouter_generation_ids=sink.generation_ids(), wall_s=time.monotonic() - self.started, grade=verdict,
            retries=retries_by_class(rec.retries, sink),
        )
        line = RunLine(
            **parts, key=str(spec.key), plan_key=spec.plan_key, plan_fingerprint=spec.plan_fingerprint,
            effective_preset=identity.effective_preset, task_id=spec.task_id, task_pack=spec.task_pack,
            task_sha256=spec.task_sha256, index=spec.index, status=status, termination_reason=end.reason,
            counts_against_model=metrics.counts_against_model, user_simulator_failure=failure, passed=verdict.passed,
            cost_usd=agent_cost, cost_source=metrics.cost_source, user_cost_usd=user_cost,
            user_cost_source=metrics.user_cost_source,
            total_tokens=total_tokens(usage), user_total_tokens=total_tokens(user_usage),
            usage=line_usage(usage), user_usage=line_usage(user_usage), n_calls=len(sink.calls),
            retries=metrics.retries,
            latency_s=round(metrics.latency_s, 9), turns=end.turns, dir=spec.key.relpath,
        )
        return TrialRecords(
            # the budget counts what is known to be spent; an unknown cost is warned about at the start
            key=spec.key, status=status, termination_reason=end.reason,
            cost_usd=round(sink.cost("agent", "summarize", "user", "judge"), 9),
            trajectory=trajectory_data, metrics=record_json(metrics), run_line=record_json(line),
            probe=self.probe_stats.to_json() if self.probe_stats is not None else None,
        )



    @staticmethod
    def _user_failure(task: TaskFile | None, end: LoopEnd,
                      trajectory: dict[str, Any]) -> UserSimulatorFailureRecord | None:
        """The LLM user simulator's failure in this trial (usersim.failures), or None (no simulator, or it held)."""
        if task is None or task.user.mode != "llm" or end.reason is TerminationReason.INTERRUPTED:
            return None
        found = user_simulator_failure(trajectory.get("messages") or [], trajectory.get("user_reply_guard_events") or [],
                                       user_ended=end.reason in USER_ENDS)
        return UserSimulatorFailureRecord.model_validate(found.to_record()) if found is not None else None

    def _grade(self, task: TaskFile | None, status: TrialStatus, end: LoopEnd,
               trajectory: dict[str, Any]) -> tuple[Grade, LoopEnd | None]:
        """The verdict, graders run on the task-code worker; a grader failure is returned as the trial's new end."""
        rec = self.recorder

        def run_graders(t: TaskFile) -> Grade:
            verdict: Grade = self.code.call("grading", grade, t, rec.tool_calls, self.state, trajectory,
                                            checkpoints=self.checkpoints, judge=self._judge(end.turns),
                                            timeout_s=GRADING_TIMEOUT_S)
            return self._pass_rule(end, verdict)

        try:
            verdict = verdict_for(task, status, self.sink.calls, run_graders)
        except (TaskCodeFailed, TaskCodeTimedOut) as exc:
            # GraderError says which grader gave no verdict and why; anything else is what the grader code raised
            why = exc.message if isinstance(exc, TaskCodeFailed) and exc.kind == "GraderError" else str(exc)
            return (Grade(passed=False, note="harness error: not graded; counted in the denominator as not passed"),
                    LoopEnd(TerminationReason.ERROR, end.turns, f"grader: {scrub(why, rec.secrets)[:2000]}"))
        except TaskCodeCancelled:
            return (Grade(passed=None, note="not graded: the run was interrupted"),
                    LoopEnd(TerminationReason.INTERRUPTED, end.turns, "the run was interrupted while grading"))
        return verdict, None

    def _judge(self, turn: int) -> Callable[[dict[str, Any]], str] | None:
        """The run's --judge-plan as a grader's ``judge``: each call recorded as a ``judge`` call of this trial
        (journalled before it is sent, so --max-cost counts it), None without a judge plan."""
        spec = self.spec
        if spec.judge_plan_json is None or spec.judge_plan_fingerprint is None:
            return None
        client = self.context.client(spec.judge_plan_json, spec.judge_plan_fingerprint, spec.judge_api_base)
        self.recorder.secrets = (*self.recorder.secrets, *secret_values((client.plan.binding.binding.api_key_env,)))
        route = _route_of(client)

        def judge(request: dict[str, Any]) -> str:
            try:
                with self.sink.sending("judge", turn):
                    result = client.generate(request, role="judge")
            except BaseException as exc:
                self.sink.failed("judge", turn, exc, route)
                raise
            self.sink.call("judge", turn, result)
            return result.text

        return judge

    def _pass_rule(self, end: LoopEnd, verdict: Grade) -> Grade:
        """The graders' verdict under the pass rule (outcome.PASS_RULE): kept as recorded, the trial not passed
        when its conversation did not reach an end the task accepts."""
        failure = unaccepted_end(end.reason, final_answer=self.final_answer, simulator_stopped=self.simulated_user)
        if failure is None or verdict.passed is None:
            return verdict
        said = "passed" if verdict.passed else "did not pass"
        return verdict.model_copy(update={"passed": False,
                                          "note": f"not passed: {failure}; the graders {said}, as recorded"})


def unstarted_records(spec: TrialSpec, reason: TerminationReason, detail: str) -> TrialRecords:
    """The records of a trial the run ended before starting (a configuration error stopped it): no call, no grade."""
    return _Trial(spec, default_context())._records(LoopEnd(reason, 0, detail))
