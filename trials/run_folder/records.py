"""The files a trial and a run leave, as models: ``schemas/`` is generated from these.

``trajectory.yaml`` is what happened (every recorded message, every tool call with its
untruncated output, retries, summarise markers, guard rejections, value substitutions, parser
errors, the environment's final state). ``metrics.yaml`` is what it cost and how it ended.
``runs.jsonl`` holds one :class:`RunLine` per finished trial; ``summary.json`` one
:class:`Summary`; ``run.json`` one :class:`RunManifest`. No credential value is ever part of
any of them. The run folder reads ``runs.jsonl`` and ``run.json`` back (resume, report), so
their models also check what a hand-edited or planted file could get wrong: names that become
folders are safe slugs, a line's key and folder agree with its parts, amounts are finite and
not negative.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from capplan.core.default_factories import empty_dict, empty_list
from capplan.executor.provider_bounds import cost_problem, quoted, token_count_problem
from capplan.trials.outcome import TerminationReason, TrialStatus
from capplan.trials.run_folder.confined import check_segment

FORMAT_VERSION = 1


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


#: fields a trial's records carry only when they say something (so a record of known cost keeps its bytes)
ONLY_WHEN_SET = frozenset({"cost_known_usd", "user_cost_known_usd", "judge_cost_usd", "user_simulator_failure"})


def record_json(record: BaseModel) -> dict[str, Any]:
    """``record`` as JSON data, without the :data:`ONLY_WHEN_SET` fields that are null."""
    unset = {name for name in ONLY_WHEN_SET if name in type(record).model_fields and getattr(record, name) is None}
    data: dict[str, Any] = record.model_dump(mode="json", exclude=unset or None)
    return data


class TrialIdentity(_Record):
    """Which trial a record belongs to."""

    key: str = Field(description="<plan_key>/<task_id>/<index>.")
    plan_key: str
    plan_fingerprint: str
    effective_preset: str
    user_plan_fingerprint: str | None = None
    task_id: str
    task_pack: str
    task_path: str = Field(description="The task file relative to the run's project root (the nearest folder above "
                                       "it holding .git, else the current directory), or external:<folder>/<file>.")
    task_sha256: str
    index: int


class ToolCallRecord(_Record):
    """One tool call and its untruncated output."""

    id: str = Field(description="The episode-unique id the history carries.")
    provider_id: str = Field(description="The id the provider minted (may repeat across turns).")
    name: str
    arguments: dict[str, Any]
    output: str = Field(description="The full output, before any truncation.")
    prompt_chars: int = Field(description="Length of the output as the model saw it (after the cap).")
    truncated: bool
    error: Literal["exception", "invalid_arguments", "unknown_tool", "timeout"] | None = None
    turn: int
    argument_violations: list[str] | None = Field(
        None, description="argument_validation: record -- how the arguments broke the tool's schema (the call ran).")
    running_at_end: bool | None = Field(
        None, description="For a call that timed out: whether it was still running when the trial ended.")
    requestor: Literal["user"] | None = Field(
        None, description="user: a call the simulated user made with its own tools (dual control; in user_tool_calls).")
    before_message: int | None = Field(
        None, description="For a user's call: the index in messages of the user turn it was made before.")


class RetryRecord(_Record):
    """One resample or replay."""

    retry_class: Literal["empty_completion", "parser_error", "output_length", "api_error"]
    turn: int
    attempt: int = Field(description="1 for the first retry of this class in this turn.")
    detail: str = ""


class SummarizeEvent(_Record):
    """One context-window handoff."""

    turn: int
    trigger: Literal["watermark", "context_window_error"]
    prompt_tokens: int | None
    recap: str = Field(description="The summariser's recap; the wire continued from it.")
    message_index: int = Field(description="Where the marker sits in messages.")


class UnreadOutputRecord(_Record):
    """An output item of an answer capplan could not interpret (a Responses item of a type it does not read).

    The call that got it failed (the trial ends error); the item may say what the model did, so it is
    kept whole here, credentials redacted, never cut to the error message's quote.
    """

    turn: int
    role: Literal["agent", "summarize"]
    index: int = Field(description="The item's place in the answer's output list.")
    item: dict[str, Any] = Field(description="The item as the answer carried it, credentials redacted.")


class ParserErrorRecord(_Record):
    """Tool-call arguments no parser accepted (quoted up to the excerpt bound)."""

    turn: int
    tool_name: str
    raw_arguments: str
    reason: str
    accepted: bool = Field(description="True when the budget was exhausted and the {}-coerced call was kept, "
                                       "and for a repaired call (executed with the repaired arguments).")
    repair_rung: str | None = Field(
        None, description="Set when the arguments were not JSON but a later rung decoded them (yaml, repaired_json, "
        "repaired_yaml): the call ran with the decoded arguments; raw_arguments is what the model sent.")


class TurnCheckpoint(_Record):
    """The environment at the end of one user turn: when the agent answered in text, the turn ended, or the trial did."""

    user_turn: int = Field(ge=0, description="0-based index of the user turn.")
    state: dict[str, Any] | None = Field(description="The state then (the final state's shape); null when it could "
                                                     "not be encoded (state_error says why).")
    state_error: str | None = Field(None, description="Why the state could not be read or encoded, naming the "
                                                      "component and attribute.")
    tool_outputs: list[str] = Field(default_factory=empty_list,
                                    description="The full (untruncated, redacted) text outputs of this turn's tool calls.")


class Termination(_Record):
    """How the trial ended."""

    reason: TerminationReason
    status: TrialStatus
    detail: str = ""
    turns: int
    max_turns: int


class Trajectory(_Record):
    """``trajectory.yaml``."""

    format: Literal["capplan-trajectory"] = "capplan-trajectory"
    version: int = FORMAT_VERSION
    trial: TrialIdentity
    simulator_schema_version: int | None = None
    system_prompt: str
    effective_system_prompt: str | None = Field(
        None, description="The system prompt the agent's first request carried: the task's prompt with what the "
                          "plan's prompt policies added (e.g. tool-use hints); null when no agent call was built.")
    tools: list[dict[str, Any]]
    messages: list[dict[str, Any]] = Field(description="The recorded view: full history, summarise markers included.")
    tool_calls: list[ToolCallRecord]
    retries: list[RetryRecord]
    summarize_events: list[SummarizeEvent]
    user_reply_guard_events: list[dict[str, Any]]
    value_substitutions: list[dict[str, Any]]
    parser_errors: list[ParserErrorRecord]
    schema_violations: list[dict[str, Any]]
    unread_output: list[UnreadOutputRecord] = Field(
        default_factory=empty_list, description="Output items of answers capplan could not interpret, each whole and "
                                          "redacted (the call failed: the trial ended error).")
    final_state: dict[str, Any] | None
    final_state_error: str | None = Field(None, description="Why the final state could not be read or encoded.")
    user_tools: list[dict[str, Any]] = Field(
        default_factory=empty_list, description="The user's own tools (dual control), as the simulator was offered them.")
    user_tool_calls: list[ToolCallRecord] = Field(
        default_factory=empty_list, description="The calls the simulated user made with its own tools, apart from the "
                                          "agent's (each requestor: user); the agent never saw them.")
    final_user_state: dict[str, Any] | None = Field(
        None, description="The user's own components' state at the end ({component: {attr: value}}); null when the "
                          "user has none or it could not be read.")
    checkpoints: list[TurnCheckpoint] = Field(default_factory=empty_list, description="One per user turn, in order.")
    metadata: dict[str, Any] = Field(default_factory=empty_dict, description="The task's metadata, as its file gives it.")
    termination: Termination


def out_of_bounds_as_unknown(data: Any) -> Any:
    """A call record's data with a recorded cost or token counter outside the provider bounds read as unknown.

    The cost becomes null (``cost_source: unknown``), a counter 0 (the record's counters are whole
    numbers summed into the trial's), and each gets a ``response_problems`` line saying what was read.
    """
    if not isinstance(data, dict):
        return data
    problems: list[str] = []
    cost = data.get("cost_usd")
    if cost is not None and cost_problem(cost) is not None:
        problems.append(f"recorded cost_usd is {cost_problem(cost)} ({quoted(cost)}), written unchecked by an older "
                        "capplan: read as unknown")
    usage = data.get("usage")
    bad = {name: value for name, value in usage.items() if token_count_problem(value) is not None
           and isinstance(value, (int, float)) and not isinstance(value, bool)} if isinstance(usage, dict) else {}
    if not problems and not bad:
        return data
    out = dict(data)
    if problems:
        out["cost_usd"], out["cost_source"] = None, "unknown"
    if bad and isinstance(usage, dict):
        out["usage"] = {**usage, **dict.fromkeys(bad, 0)}
        problems += [f"recorded usage.{name} is {token_count_problem(value)} ({quoted(value)}), written unchecked by "
                     "an older capplan: read as unknown (0 in the sums)" for name, value in bad.items()]
        if out.get("cost_usd") is not None:
            out["cost_usd"], out["cost_source"] = None, "unknown"
    out["response_problems"] = [*(data.get("response_problems") or []), *problems]
    return out


# The fields are capplan.executor.usage.TOKEN_COUNTERS in its order, declared here so the record is typed and
# its JSON Schema generated (the docstring is the schema's description); tests/trials/test_usage_record.py
# fails when the two part.
class UsageRecord(_Record):
    """Token counters, summed field-wise over calls."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    cached_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0


class CallRecord(_Record):
    """One provider attempt the trial made: the retry controllers' attempts, resampled and discarded ones included."""

    role: Literal["agent", "summarize", "user", "judge"]
    turn: int = Field(description="The agent turn; for role user, the user turn (0 = the opening); for role judge "
                                  "(a grader's judge model, --judge-plan), the agent turns the trial played.")
    outcome: Literal["accepted", "resampled", "failed", "guard_rejected"] = Field(
        description="failed: an attempt that raised (a later attempt of the same call, when there is one, was the "
        "retry controller sending it again).")
    status: Literal["ok", "error"] = "ok"
    error_class: str | None = Field(None, description="rate_limit, timeout, server_error, connection, credential, "
                                                       "client_error or other; null when the attempt answered.")
    error_type: str | None = Field(None, description="The exception's class name.")
    attempt: int = Field(1, description="1 for a call's first attempt, then 2, 3… for every send of it (the "
                                        "transport's retries and the loop's API-error replay alike).")
    retry_class: str | None = Field(
        None, description="Why this attempt was not the call's last: a loop class (empty_completion, parser_error, "
        "output_length) on a resampled answer, or transport_<error_class> on a failed attempt the transport sent "
        "again (transport_rate_limit, transport_server_error, transport_timeout, transport_connection, …).")
    usage: UsageRecord | None = Field(description="null: the provider reported no token counts (an attempt that "
                                                  "failed, an answer without usage); unknown, never 0 tokens.")
    cost_usd: float | None = Field(description="null: unknown (no reported cost and nothing to price).")
    cost_source: Literal["litellm", "pricing", "unknown", "none"] = Field(
        description="none: the call raised before anything was sent, so it cost nothing (cost_usd 0).")
    wait_s: float = Field(0.0, description="Backoff slept before this attempt.")
    latency_s: float = Field(description="This attempt's own round trip (its wait_s is beside it).")
    finish_reason: str | None = None
    openrouter_generation_id: str | None = None
    response_id: str | None = Field(None, max_length=256, description="The provider's id of the answer (resp_… on a "
                                    "Responses route).")
    gateway_route: str | None = None
    gateway_route_kind: Literal["exact", "wildcard", "untranslated", "direct"] | None = None
    key_index: int | None = Field(None, description="The rotation key's index that served it (never the key).")
    response_problems: list[str] = Field(
        default_factory=empty_list, description="What the provider's answer reported out of bounds (a negative or "
        "non-finite cost, an absurd token count), one line each; the call's cost is then unknown.")
    retry_after_s: float | None = Field(
        None, ge=0, allow_inf_nan=False,
        description="The Retry-After seconds this failed attempt's answer asked for, as sent; the next attempt's "
        "wait_s is what was waited (at most the binding's retry_after_max_s).")

    @model_validator(mode="before")
    @classmethod
    def _bounded(cls, data: Any) -> Any:
        # a call journal or metrics file an older capplan wrote can hold a provider's figure unchecked
        # (a cost of -5000 or Infinity, 1e308 tokens): read as unknown and said so, never a dead resume
        return out_of_bounds_as_unknown(data)


class GraderResult(_Record):
    """One grader's verdict."""

    name: str
    passed: bool
    score: float | None = Field(None, allow_inf_nan=False, description="A custom grader's score, when it gives one.")
    detail: Any = None
    reasons: list[str] = Field(default_factory=empty_list, description="One line per failed check: which turn, which key "
                                                                 "or output, expected against actual.")


class Grade(_Record):
    """All graders' verdicts; ``passed`` is None when the task has no grader or the trial was not gradeable."""

    passed: bool | None
    graders: list[GraderResult] = Field(default_factory=empty_list)
    note: str | None = Field(
        None, description="Why the trial was not graded, or why it counts as not passed without a grader's verdict "
        "(no agent completion, a harness error in the denominator)."
    )


class UserSimulatorFailureRecord(_Record):
    """The trial's user simulator broke (``capplan.trials.usersim.failures``): the trial is not the agent's to count."""

    kind: Literal["reply_refused", "looped", "ended_early"]
    detail: str = Field(max_length=2000)
    codes: list[str] = Field(default_factory=empty_list, max_length=64,
                             description="The reply guard's detector:reason codes (reply_refused), never the reply.")


class Metrics(_Record):
    """``metrics.yaml``."""

    format: Literal["capplan-metrics"] = "capplan-metrics"
    version: int = FORMAT_VERSION
    trial: TrialIdentity
    status: TrialStatus
    termination_reason: TerminationReason
    counts_against_model: bool = Field(description="False for rate limits, timeouts and infrastructure aborts, and "
                                                   "for a trial whose user simulator broke.")
    user_simulator_failure: UserSimulatorFailureRecord | None = Field(
        None, description="Set when the user simulator broke: left out of the agent's pass rate, counted apart.")
    turns: int
    max_turns: int
    usage: UsageRecord | None = Field(description="The agent model's calls (turns, resamples, summarise); null when "
                                                  "one of them reported no token counts (see calls).")
    user_usage: UsageRecord | None = Field(description="The user simulator's calls, as usage.")
    cost_usd: float | None = Field(
        description="Agent-side cost (turns, resamples, summarise) in USD, rounded to 1e-9; null when one of their "
        "calls has no known cost (an answer without cost or usage, an attempt that failed after it was sent).")
    cost_source: Literal["litellm", "pricing", "unknown", "mixed", "none"]
    user_cost_usd: float | None = Field(description="The user simulator's cost, as cost_usd.")
    user_cost_source: Literal["litellm", "pricing", "unknown", "mixed", "none"] = "none"
    cost_known_usd: float | None = Field(
        None, ge=0, allow_inf_nan=False, description="Only when cost_usd is null: what the agent-side calls of known "
        "cost spent (a lower bound of the cost).")
    user_cost_known_usd: float | None = Field(
        None, ge=0, allow_inf_nan=False, description="Only when user_cost_usd is null: as cost_known_usd.")
    judge_cost_usd: float | None = Field(
        None, ge=0, allow_inf_nan=False, description="Only when a grader asked the judge (--judge-plan): what its "
        "calls are known to have cost (a call of unknown cost adds nothing; see calls).")
    n_calls: int
    calls: list[CallRecord]
    latency_s: float = Field(description="Summed provider latency of every attempt, backoff waits included.")
    wait_s: float = Field(0.0, description="The backoff waits inside latency_s.")
    retries: dict[str, int] = Field(
        default_factory=empty_dict, description="Retries by class: the loop's (empty_completion, parser_error, "
        "output_length, api_error) and the transport's (transport_rate_limit, transport_server_error, "
        "transport_timeout, transport_connection, …).")
    openrouter_generation_ids: list[str] = Field(
        default_factory=empty_list, description="Every OpenRouter generation id of the trial's calls, in call order.")
    wall_s: float
    grade: Grade
    lost_attempts: int = Field(
        0, description="Attempts of this trial that died with their worker or node and were rerun from the start "
        "(Ray backend, or a worker process of `trial run --workers N`); their calls are not in `calls`."
    )


#: the most trials one plan × task may have; an index beyond it is not one capplan wrote
MAX_TRIAL_INDEX = 10**9
#: a sha256 / plan fingerprint as capplan writes them (hex, possibly with a scheme prefix)
_DIGEST = re.compile(r"(?:[a-z0-9]+:)?[0-9a-f]{16,128}")


def _safe(value: str, what: str) -> str:
    return check_segment(value, what)  # UnsafeName is a ValueError: pydantic reports it at the field


def _digest(value: str, what: str) -> str:
    if _DIGEST.fullmatch(value) is None:
        raise ValueError(f"{what} must be a hex digest")
    return value


def _named(what: str) -> AfterValidator:
    return AfterValidator(lambda v: _safe(v, what))


def _hex(what: str) -> AfterValidator:
    return AfterValidator(lambda v: _digest(v, what))


# the fields a record turns into paths or compares by digest: one rule each, stated where the field is
ModelKey = Annotated[str, _named("model key")]
TaskId = Annotated[str, _named("task id")]
TaskPack = Annotated[str, _named("task pack")]


_RUN_ID = re.compile(r"[0-9a-f]{32}")
#: an ISO-8601 UTC timestamp as capplan writes it
_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?Z")


def _run_id(value: str) -> str:
    if _RUN_ID.fullmatch(value) is None:
        raise ValueError("run_id must be 32 lowercase hex digits")
    return value


def _trial_key(key: str) -> str:
    parts = key.split("/")
    if len(parts) != 3 or not parts[2].isdigit() or not parts[2].isascii():
        raise ValueError("a trial key must be <plan_key>/<task_id>/<index>")
    _safe(parts[0], "model key")
    _safe(parts[1], "task id")
    return key


def _utc(value: str | None) -> str | None:
    if value is not None and _UTC.fullmatch(value) is None:
        raise ValueError("must be a UTC timestamp YYYY-MM-DDTHH:MM:SS[.ffffff]Z")
    return value


class LineUsage(_Record):
    """A trial's token counters as its ``runs.jsonl`` line carries them (cache counters folded per route)."""

    prompt_tokens: int = Field(0, ge=0)
    completion_tokens: int = Field(0, ge=0)
    reasoning_tokens: int = Field(0, ge=0)
    cache_read_tokens: int = Field(0, ge=0)
    cache_write_tokens: int = Field(0, ge=0)


class RunLine(_Record):
    """One line of ``runs.jsonl``: a finished trial.

    A trial retried after an abort has several lines, one per attempt; the highest attempt is
    the trial's result, and every attempt's cost was spent. A line repeated as it is (same key,
    same attempt) is one record, counted once.
    """

    key: str = Field(description="<plan_key>/<task_id>/<index>.")
    attempt: int | None = Field(
        None, ge=1, le=MAX_TRIAL_INDEX,
        description="1 for a trial's first finished attempt, then 2, 3… (absent in lines written before attempts "
                    "were numbered)."
    )
    plan_key: ModelKey
    plan_fingerprint: Annotated[str, _hex("plan_fingerprint")]
    effective_preset: str = Field(max_length=256)
    task_id: TaskId
    task_pack: TaskPack
    task_sha256: Annotated[str, _hex("task_sha256")]
    index: int = Field(ge=0, le=MAX_TRIAL_INDEX)
    status: TrialStatus
    termination_reason: TerminationReason
    counts_against_model: bool
    #: the user simulator broke (kind, detail, guard codes): the trial is out of the agent's pass rate
    user_simulator_failure: UserSimulatorFailureRecord | None = None
    passed: bool | None
    cost_usd: float | None = Field(
        ge=0, allow_inf_nan=False,
        description="Agent-side cost in USD (null: unknown). Lines written before user_cost_usd existed hold the "
                    "agent and user-simulator total here.")
    cost_source: Literal["litellm", "pricing", "unknown", "mixed", "none"] | None = None
    user_cost_usd: float | None = Field(None, ge=0, allow_inf_nan=False,
                                        description="The user simulator's cost in USD (null: unknown or absent).")
    user_cost_source: Literal["litellm", "pricing", "unknown", "mixed", "none"] | None = None
    cost_known_usd: float | None = Field(
        None, ge=0, allow_inf_nan=False, description="Only when cost_usd is null: what the agent-side calls of known "
        "cost spent (a lower bound of the cost; absent otherwise).")
    judge_cost_usd: float | None = Field(
        None, ge=0, allow_inf_nan=False, description="Only when a grader asked the judge (--judge-plan): what its "
        "calls are known to have cost (a call of unknown cost adds nothing; see calls).")
    user_cost_known_usd: float | None = Field(
        None, ge=0, allow_inf_nan=False, description="Only when user_cost_usd is null: as cost_known_usd.")
    total_tokens: int | None = Field(ge=0, description="The agent's prompt + completion tokens; null when a call "
                                                       "reported no token counts.")
    user_total_tokens: int | None = Field(None, ge=0, description="The user simulator's prompt + completion tokens "
                                                                   "(null: unknown, as total_tokens, or absent).")
    usage: LineUsage | None = Field(None, description="The agent's token counters (null: unknown, or absent).")
    user_usage: LineUsage | None = Field(None, description="The user simulator's token counters, as usage.")
    n_calls: int | None = Field(None, ge=0, description="Provider calls of the trial, every role.")
    retries: dict[str, int] | None = Field(None, description="Retries by class, the loop's and the transport's "
                                                              "(as metrics.yaml's retries).")
    latency_s: float | None = Field(None, ge=0, allow_inf_nan=False, description="Summed provider latency.")
    turns: int = Field(ge=0)
    dir: str = Field(description="The trial's folder, trials/<plan_key>/<task_id>/<index>.")
    run_id: str | None = Field(None, max_length=64,
                               description="The run.json run_id of the run that wrote the line (absent in older lines).")
    user_plan_fingerprint: str | None = Field(
        None, description="The user simulator's plan fingerprint; null without a user plan (and in older lines).")

    @field_validator("user_plan_fingerprint")
    @classmethod
    def _user_fingerprint(cls, v: str | None) -> str | None:
        return v if v is None else _digest(v, "user_plan_fingerprint")

    @field_validator("run_id")
    @classmethod
    def _run_id(cls, v: str | None) -> str | None:
        return v if v is None else _run_id(v)

    @model_validator(mode="after")
    def _agrees_with_its_parts(self) -> RunLine:
        if self.key != f"{self.plan_key}/{self.task_id}/{self.index}":
            raise ValueError("key must be <plan_key>/<task_id>/<index> of this same line")
        if self.dir != f"trials/{self.plan_key}/{self.task_id}/{self.index}":
            raise ValueError("dir must be trials/<plan_key>/<task_id>/<index> of this same line")
        return self


class RunTask(_Record):
    """One task file a run used, as ``run.json`` lists it."""

    path: str
    sha256: Annotated[str, _hex("sha256")]
    pack: TaskPack


class RunInstalledModule(_Record):
    """An environment or grader module a task imports as an installed module (not a file of its folder)."""

    distribution: str | None = Field(description="The distribution that provides it; null when none does.")
    version: str | None = Field(description="That distribution's version; null when unknown.")


class RunSettings(_Record):
    """Everything besides the plans and task files that defines the experiment; a resume must match it."""

    user_plan_fingerprint: str | None = Field(description="The --user-plan's fingerprint; null without one.")
    max_turns: int | None = Field(ge=1, description="--max-turns; null when not given.")
    trials: int = Field(ge=1, le=MAX_TRIAL_INDEX, description="--trials.")
    run_config_sha256: str | None = Field(description="sha256 of the --config file; null when not given.")
    module_files: dict[str, str] = Field(
        description="Every file of the environment and grader modules the tasks import from their folders "
                    "(project-relative path -> sha256).")
    installed_modules: dict[str, RunInstalledModule] = Field(
        description="Environment and grader modules imported as installed modules, by module name.")
    capplan_version: str | None
    litellm_version: str | None = Field(description="Null when litellm is not installed.")

    @field_validator("user_plan_fingerprint", "run_config_sha256")
    @classmethod
    def _digests(cls, v: str | None) -> str | None:
        return v if v is None else _digest(v, "fingerprint")

    @field_validator("module_files")
    @classmethod
    def _module_files(cls, v: dict[str, str]) -> dict[str, str]:
        for digest in v.values():
            _digest(digest, "module file sha256")
        return v


class RunInvocation(_Record):
    """One ``capplan trial run`` of the folder: the first, then each resume."""

    started_at: str
    ended_at: str | None = Field(None, description="Null while it runs, or when the process was killed.")
    command: list[str] = Field(description="The command line, credentials redacted and paths made project-relative.")

    @field_validator("started_at", "ended_at")
    @classmethod
    def _times(cls, v: str | None) -> str | None:
        return _utc(v)


class RunInterruptedSpend(_Record):
    """What one interrupted trial had spent when it stopped (it reruns from the start: that money is gone)."""

    key: str
    cost_usd: float | None = Field(ge=0, allow_inf_nan=False, description="Agent and user simulator; null: unknown.")
    known_usd: float | None = Field(
        None, ge=0, allow_inf_nan=False, description="Only when cost_usd is null: what its calls of known cost spent (a "
        "lower bound; the budget counts it).")
    at: str = Field(description="When the invocation that interrupted it ended.")

    @field_validator("key")
    @classmethod
    def _key(cls, v: str) -> str:
        return _trial_key(v)

    @field_validator("at")
    @classmethod
    def _at(cls, v: str) -> str:
        return _utc(v) or v


class RunDiedSpend(_Record):
    """One trial attempt that died in flight (SIGKILL, OOM, a lost worker): its calls as calls.jsonl has them."""

    key: str
    attempt: int = Field(ge=1, description="The runs.jsonl attempt it would have been.")
    execution: str = Field(max_length=64, description="The journal's id of that execution.")
    calls: int = Field(ge=0, description="Provider attempts it made (failed ones included).")
    agent_cost_usd: float | None = Field(ge=0, allow_inf_nan=False,
                                         description="Agent and summarise calls; null: a call's cost is unknown.")
    user_cost_usd: float | None = Field(ge=0, allow_inf_nan=False,
                                        description="User-simulator calls; null: a call's cost is unknown.")
    unknown_cost_calls: int = Field(ge=0, description="Answered calls whose cost nobody knows.")
    unanswered_sends: int = Field(0, ge=0, description="Sends journalled with no outcome after them: sent, "
                                                     "outcome and cost unknown.")
    agent_tokens: int = Field(0, ge=0, description="Agent prompt + completion tokens.")
    user_tokens: int = Field(0, ge=0, description="User-simulator prompt + completion tokens.")

    @field_validator("key")
    @classmethod
    def _key(cls, v: str) -> str:
        return _trial_key(v)


class RunManifest(_Record):
    """``run.json``: what defines the run's experiment, which trials are unfinished, and what unfinished ones cost.

    Version 1 files (written before run settings were recorded) hold only ``plans``, ``tasks``
    and ``interrupted``; they still read back, with ``settings`` null.
    """

    format: Literal["capplan-trial-run"] = "capplan-trial-run"
    version: Literal[1, 2] = 2
    run_id: str | None = Field(None, description="32 hex digits, minted when the folder is created; kept on resume.")
    started_at: str | None = Field(None, description="When the first invocation started (UTC).")
    ended_at: str | None = Field(None, description="When the latest invocation ended (UTC); null while running.")
    command: list[str] | None = Field(None, description="The first invocation's command line, redacted.")
    invocations: list[RunInvocation] = Field(default_factory=empty_list)
    plans: dict[str, str] = Field(default_factory=empty_dict, description="Model key -> plan fingerprint.")
    tasks: dict[str, RunTask] = Field(default_factory=empty_dict, description="Task id -> the task file.")
    settings: RunSettings | None = Field(None, description="Null in run.json files of older capplan versions.")
    interrupted: list[str] = Field(default_factory=empty_list,
                                   description="Trial keys that did not finish; the next run of the command runs them.")
    interrupted_spend: list[RunInterruptedSpend] = Field(
        default_factory=empty_list, description="Every interrupted trial attempt's spend so far, across invocations.")
    interrupted_spend_usd: float = Field(0.0, ge=0, allow_inf_nan=False,
                                         description="The sum of interrupted_spend (unknown costs count as 0).")
    died_in_flight: list[RunDiedSpend] = Field(
        default_factory=empty_list, description="Trial attempts whose process died mid-trial (their calls are only in "
                                          "calls.jsonl), with what they had spent; recomputed from the journal.")
    died_in_flight_usd: float = Field(0.0, ge=0, allow_inf_nan=False,
                                      description="The known part of died_in_flight's spend (unknown costs apart).")

    @field_validator("run_id")
    @classmethod
    def _run_id(cls, v: str | None) -> str | None:
        return v if v is None else _run_id(v)

    @field_validator("started_at", "ended_at")
    @classmethod
    def _times(cls, v: str | None) -> str | None:
        return _utc(v)

    @field_validator("plans")
    @classmethod
    def _plans(cls, v: dict[str, str]) -> dict[str, str]:
        for key, fingerprint in v.items():
            _safe(key, "model key")
            _digest(fingerprint, "plan fingerprint")
        return v

    @field_validator("tasks")
    @classmethod
    def _tasks(cls, v: dict[str, RunTask]) -> dict[str, RunTask]:
        for key in v:
            _safe(key, "task id")
        return v

    @field_validator("interrupted")
    @classmethod
    def _interrupted(cls, v: list[str]) -> list[str]:
        for key in v:
            parts = key.split("/")
            if len(parts) != 3 or not parts[2].isdigit() or not parts[2].isascii():
                raise ValueError("each interrupted trial must be <plan_key>/<task_id>/<index>")
            _safe(parts[0], "model key")
            _safe(parts[1], "task id")
        return v


class CostStat(_Record):
    """One role's cost over a row's trials; trials of unknown cost are counted, never priced at 0."""

    total_usd: float | None = Field(
        description="Every known dollar: the trials of known cost, plus the known part (cost_known_usd) of the "
                    "others; a lower bound when unknown_trials > 0; null when nothing is known.")
    mean_usd: float | None = Field(description="Mean over the trials of known cost; null when none is known.")
    unknown_trials: int = Field(description="Trials whose cost is unknown (left out of the mean).")


class TokenStat(_Record):
    """One role's token counters: sum over a row's trials (``mean`` in :class:`SummaryRow` divides by trials)."""

    prompt: float = 0
    completion: float = 0
    reasoning: float = 0
    cache_read: float = 0
    cache_write: float = 0


class SummaryRow(_Record):
    """One model × task pack."""

    plan_key: str
    task_pack: str
    trials: int
    counted: int = Field(description="Trials that count against the model (completed, failed, error).")
    passed: int
    failed: int = Field(0, description="Graded trials that did not pass (harness errors are counted apart).")
    error: int = Field(0, description="Harness errors: not the agent's, in the denominator as not passed.")
    aborted: int = Field(0, description="Aborted trials: excluded from the pass rate.")
    graded: int = Field(description="The pass-rate denominator: graded trials plus harness errors of graded tasks.")
    pass_rate: float | None
    user_failures: int = Field(0, description="Trials whose user simulator broke (left out of the agent's pass rate).")
    user_failure_rate: float | None = Field(
        None, description="user_failures over the trials that ran to an end (completed, failed, error); null: none did.")
    pass_rate_ci95: tuple[float, float] | None = Field(None, description="Wilson score interval at 95 %.")
    pass_hat_k: dict[str, float] | None = Field(
        None, description="pass^k for k = 1..n (n: the most graded trials of a task), when n > 1: per task "
        "C(c, k) / C(n, k) with c passes of n graded trials, averaged over the tasks with n >= k (tau-bench's "
        "reliability metric; a task with fewer than k graded trials is left out of that k only).")
    pass_hat_k_tasks: dict[str, int] | None = Field(
        None, description="For each k of pass_hat_k, the tasks it averages over (those with at least k graded "
        "trials); '1' counts every task with a graded trial.")
    mean_cost_usd: float | None = Field(description="Mean agent + user cost of the trials of known cost.")
    agent_cost: CostStat | None = None
    user_cost: CostStat | None = None
    mean_tokens: float | None = Field(description="Mean agent prompt + completion tokens over the trials whose "
                                                   "tokens are known; null when none is.")
    unknown_token_trials: int = Field(0, description="Trials whose agent tokens are unknown (left out of the token "
                                                     "means and sums).")
    agent_tokens: TokenStat | None = Field(None, description="Agent token counters summed over the row's trials.")
    user_tokens: TokenStat | None = Field(None, description="User-simulator token counters summed over the trials.")
    mean_agent_tokens: TokenStat | None = None
    mean_user_tokens: TokenStat | None = None
    mean_turns: float | None = None
    total_calls: int | None = None
    mean_calls: float | None = None
    retries: dict[str, int] = Field(default_factory=empty_dict, description="Retries by class, summed over trials: the "
                                    "loop's (empty_completion, parser_error, output_length, api_error) and the "
                                    "transport's (transport_rate_limit, transport_server_error, transport_timeout, "
                                    "transport_connection, …).")
    latency_p50_s: float | None = None
    latency_p95_s: float | None = None
    termination_reasons: dict[str, int]


class Summary(_Record):
    """``summary.json``."""

    format: Literal["capplan-trial-summary"] = "capplan-trial-summary"
    version: int = FORMAT_VERSION
    rows: list[SummaryRow]
    total_cost_usd: float | None = Field(
        description="Every known cost of every attempt, interrupted trials' spend included: a lower bound when "
                    "unknown_cost_trials > 0; null when no cost is known at all.")
    agent_cost_usd: float | None = Field(0.0, description="The agents' part of total_cost_usd, as it.")
    user_cost_usd: float | None = Field(0.0, description="The user simulators' part of total_cost_usd, as it.")
    unfinished_cost_usd: float = Field(0.0, description="Spend of trials that did not finish (from run.json).")
    unknown_cost_trials: int = Field(0, description="Trials whose cost is unknown (not in the totals).")
    trials: int
