"""``run_trial(spec) -> TrialRecords``: one whole trial, from a pure spec to plain records.

This is the function every backend calls (see ``capplan.trials.spec`` for the contract). It never
writes the run folder and never raises for anything a trial can do: provider failures,
environment bugs, refused user replies and harness defects all come back as records with a
typed termination reason.

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
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from capplan.executor.client import Client, Completion
from capplan.executor.plan import Plan, verify_fingerprint
from capplan.executor.probe import RateLimitProbeConfig
from capplan.executor.probe_stats import ProbeStats
from capplan.executor.result import GenerationResult
from capplan.trials.usersim import SIMULATOR_SCHEMA_VERSION, GuardEvent
from capplan.trials.grading import grade, verdict_for
from capplan.trials.environment import final_state
from capplan.trials.loop import LoopConfig, LoopEnd, ToolCallingLoop
from capplan.trials.terminal import Terminal
from capplan.trials.outcome import TerminationReason, counts_against_model, status_for
from capplan.trials.recording import MetricsSink, Recorder, scrub, secret_values
from capplan.trials.costs import known_cost, line_usage, rounded_calls
from capplan.trials.records import Metrics, RunLine, Termination, Trajectory, TrialIdentity
from capplan.trials.spec import TrialRecords, TrialSpec
from capplan.trials.tasks import LoadedTask, load_task_text
from capplan.trials.taskfile import LlmUser as LlmUserConfig
from capplan.trials.tools import ToolRunner
from capplan.trials.turn_budget import resolve_max_turns
from capplan.trials.users import LlmUser, ScriptedUser, UserAdapter
from capplan.trials.classify import classifier


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
    ) -> None:
        """``completion_for`` builds a plan's completion function (the Ray worker's limiter gate needs
        the plan's provider and key); it wins over ``completion``. ``clock`` (the probe's per-call
        budget) and ``wall_clock`` (telemetry windows) go to every client, beside ``sleep``."""
        self.sleep = sleep
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
        self.probe = RateLimitProbeConfig.model_validate(spec.rate_limit_probe) if spec.rate_limit_probe else None
        # one census per trial, returned with its records: the driver sums trials wherever they ran
        self.probe_stats = (ProbeStats(bucket_width_s=self.probe.bucket_width_s, max_buckets=self.probe.max_buckets)
                            if self.probe is not None and self.probe.enabled else None)

    def run(self) -> TrialRecords:
        try:
            end = self._converse()
        except Exception as exc:  # a harness defect must still leave a record, never kill the run
            end = LoopEnd(TerminationReason.ERROR, 0, f"{type(exc).__name__}: {scrub(str(exc), self.recorder.secrets)[:1000]}")
        return self._records(end)

    def _converse(self) -> LoopEnd:
        spec, ctx = self.spec, self.context
        client = ctx.client(spec.plan_json, spec.plan_fingerprint, spec.api_base, self.probe)
        self.plan = plan = client.plan
        binding = plan.binding.binding
        self.recorder.secrets = secret_values((binding.api_key_env,))
        self.task = loaded = ctx.task(spec)
        task = loaded.task
        self.max_turns = resolve_max_turns(task.max_turns, spec.max_turns_cap, plan.loop.default_max_turns)
        instance = loaded.environment(**task.environment_args)
        tools = task.tool_specs()
        prepared = client.builder.tool_memo.prepare(json.dumps(tools, separators=(",", ":")).encode("utf-8"))
        runner = ToolRunner(instance, prepared=prepared, plan_cap=plan.loop.tool_output_max_chars,
                            tool_caps={t.name: t.output_max_chars for t in task.tools}, recorder=self.recorder)
        loop = ToolCallingLoop(
            generate=functools.partial(client.generate, role="agent", probe_stats=self.probe_stats),
            system_prompt=task.system_prompt, tools=tools, tool_runner=runner,
            user=self._user(), recorder=self.recorder, sink=self.sink,
            config=LoopConfig(knobs=plan.loop, max_turns=self.max_turns), sleep=ctx.sleep,
            classify=classifier(client.classify_loop_error), cancel=ctx.cancel, route=_route_of(client),
        )
        end = loop.run()
        self.state = final_state(instance)
        return end

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
                result = client.generate(request, role="user", probe_stats=self.probe_stats)
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
            rejected = user_calls[-count:] if event.outcome == "refused" else user_calls[-count - 1:-1]
            for call in rejected:
                call.outcome = "guard_rejected"

        return LlmUser(generate, trial_id=spec.trial_id, backstory=user.backstory,
                       initial_message=user.initial_message, on_guard_event=on_guard_event)

    def _records(self, end: LoopEnd) -> TrialRecords:
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
            messages=rec.messages, tool_calls=rec.tool_calls, retries=rec.retries,
            summarize_events=rec.summarize_events, user_reply_guard_events=rec.guard_events,
            value_substitutions=rec.value_substitutions, parser_errors=rec.parser_errors,
            schema_violations=rec.schema_violations, final_state=self.state, termination=termination,
        )
        trajectory_data = trajectory.model_dump(mode="json")
        sink = self.sink
        verdict = verdict_for(task, status, sink.calls, lambda t: grade(t, rec.tool_calls, self.state, trajectory_data))
        usage = sink.usage("agent", "summarize")
        user_usage = sink.usage("user")
        agent_cost, user_cost = known_cost(sink.calls, ("agent", "summarize")), known_cost(sink.calls, ("user",))
        metrics = Metrics(
            trial=identity, status=status, termination_reason=end.reason,
            counts_against_model=counts_against_model(status), turns=end.turns, max_turns=self.max_turns,
            usage=usage, user_usage=user_usage, cost_usd=agent_cost,
            cost_source=sink.cost_source("agent", "summarize"),
            user_cost_usd=user_cost, user_cost_source=sink.cost_source("user"), n_calls=len(sink.calls),
            calls=rounded_calls(sink.calls), latency_s=sink.latency(), wait_s=sink.wait(),
            openrouter_generation_ids=sink.generation_ids(), wall_s=time.monotonic() - self.started, grade=verdict,
        )
        line = RunLine(
            key=str(spec.key), plan_key=spec.plan_key, plan_fingerprint=spec.plan_fingerprint,
            effective_preset=identity.effective_preset, task_id=spec.task_id, task_pack=spec.task_pack,
            task_sha256=spec.task_sha256, index=spec.index, status=status, termination_reason=end.reason,
            counts_against_model=metrics.counts_against_model, passed=verdict.passed,
            cost_usd=agent_cost, cost_source=metrics.cost_source, user_cost_usd=user_cost,
            user_cost_source=metrics.user_cost_source,
            total_tokens=usage.prompt_tokens + usage.completion_tokens,
            user_total_tokens=user_usage.prompt_tokens + user_usage.completion_tokens,
            usage=line_usage(usage), user_usage=line_usage(user_usage), n_calls=len(sink.calls),
            retries=dict(sorted(Counter(r.retry_class for r in rec.retries).items())),
            latency_s=round(metrics.latency_s, 9), turns=end.turns, dir=spec.key.relpath,
        )
        return TrialRecords(
            # the budget counts what is known to be spent; an unknown cost is warned about at the start
            key=spec.key, status=status, termination_reason=end.reason,
            cost_usd=round(sink.cost("agent", "summarize", "user"), 9),
            trajectory=trajectory_data, metrics=metrics.model_dump(mode="json"), run_line=line.model_dump(mode="json"),
            probe=self.probe_stats.to_json() if self.probe_stats is not None else None,
        )



def unstarted_records(spec: TrialSpec, reason: TerminationReason, detail: str) -> TrialRecords:
    """The records of a trial the run ended before starting (a configuration error stopped it): no call, no grade."""
    return _Trial(spec, default_context())._records(LoopEnd(reason, 0, detail))
