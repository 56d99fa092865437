"""The trial's recorder and metrics sink.

The recorder keeps the recorded view of the conversation (the full history, summarise and
terminal markers included) and the side records the trajectory carries. The sink keeps one
:class:`~capplan.trials.run_folder.records.CallRecord` per provider call the trial paid for, resampled and
discarded generations included, and the last agent prompt size the watermark check reads.

No credential value is written. The rule is by value: every error and tool text that reaches a
record passes :func:`scrub`, and every finished trial's records pass :func:`redact_records` on
their way out of the process that ran them (the local backend, a Ray worker), both against the
one redactor (:mod:`capplan.core.redaction`), which knows every credential any client in the process
holds. :func:`scrub` also replaces credential-looking shapes (``sk-…``, ``Bearer …``), a second
net for a value no client registered.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from typing import Any, Literal

from capplan.core.redaction import Redactor, check_text, process_redactor
from capplan.executor.attempts import attempts_of
from capplan.executor.cost import has_token_counts
from capplan.executor.responses_response import KNOWN_ITEMS, UnknownOutputItemError
from capplan.executor.result import Attempt, GenerationResult
from capplan.executor.send_observer import Send, observing_sends
from capplan.executor.usage import TOKEN_COUNTERS, Usage
from capplan.trials.run_folder.call_journal import CallLog, current_log
from capplan.trials.run_folder.costs import cost_source, known_usage
from capplan.trials.run_folder.records import (
    CallRecord,
    ParserErrorRecord,
    RetryRecord,
    SummarizeEvent,
    ToolCallRecord,
    UnreadOutputRecord,
    UsageRecord,
)
from capplan.trials.spec import TrialRecords, with_rendered
from capplan.trials.terminal import Terminal

_KEYISH = re.compile(r"\b(sk-[A-Za-z0-9_-]{6,}|Bearer\s+[A-Za-z0-9._-]{6,})")


def scrub(text: str, secrets: tuple[str, ...] = ()) -> str:
    """``text`` with every known credential value, the given ``secrets`` and credential-looking tokens redacted."""
    text = process_redactor().text(text)
    for secret in secrets:
        if len(secret) >= 4:
            text = text.replace(secret, "<redacted>")
    return _KEYISH.sub("<redacted>", text)


#: a finished trial's trajectory, metrics and probe census as :func:`capplan.core.redaction.check_text` writes
#: them (None: not JSON data, or no probe census)
RecordTexts = tuple[str | None, str | None, str | None]


def record_texts(records: TrialRecords) -> RecordTexts:
    """The texts :func:`redact_records` searches for ``records``, written where the records were made.

    A worker process sends them with its (already redacted) records, so the run's writer searches
    them for what it knows instead of encoding every finished trial's records again.
    """
    return (check_text(records.trajectory), check_text(records.metrics),
            check_text(records.probe) if records.probe is not None else None)


def redact_records(records: TrialRecords, redactor: Redactor | None = None, *,
                   texts: RecordTexts | None = None) -> TrialRecords:
    """``records`` with every known credential value replaced in the trajectory, the metrics and the probe census.

    By value only: the shape net of :func:`scrub` stays on the texts it already covers (errors, tool
    output), as over a whole conversation it would rewrite prose. The model's own text is included:
    a provider that echoes the headers it was sent puts them in the completion. Left as they are: each file's ``trial`` identity block and the runs.jsonl
    line, which hold only names, digests, enums and numbers taken from the run's own files (and
    index the run folder: a task id that happened to equal a literal gateway header value must
    still resume).
    """
    redactor = redactor if redactor is not None else process_redactor()
    trajectory_text, metrics_text, probe_text = texts if texts is not None else (None, None, None)

    def clean(data: dict[str, Any], text: str | None) -> dict[str, Any]:
        # one search over the whole file's JSON text first: a trial's records seldom hold anything to redact
        if not redactor.may_change(data, text):
            return data
        out: dict[str, Any] = {k: v if k == "trial" else redactor.value(v) for k, v in data.items()}
        return out

    trajectory, metrics = clean(records.trajectory, trajectory_text), clean(records.metrics, metrics_text)
    redacted = dataclasses.replace(records, trajectory=trajectory, metrics=metrics,
                                   probe=clean(records.probe, probe_text) if records.probe is not None else None)
    if records.rendered is not None and trajectory is records.trajectory and metrics is records.metrics:
        return with_rendered(redacted, records.rendered)  # nothing to replace: the files rendered from them hold
    return redacted


def secret_values(env_names: tuple[str | None, ...]) -> tuple[str, ...]:
    """The current values of the named credential variables (to scrub, never to record)."""
    return tuple(v for n in env_names if n for v in [os.environ.get(n, "")] if v)


#: The prefix of a transport retry's class (``transport_rate_limit``, ``transport_server_error``,
#: ``transport_timeout``, ``transport_connection``, …), beside the loop's own retry classes.
TRANSPORT_RETRY = "transport_"


def transport_retry_class(error_class: str | None) -> str:
    """The retry class of a failed attempt the transport sent again: its error class, prefixed."""
    return TRANSPORT_RETRY + (error_class or "other")


def retries_by_class(loop_retries: list[RetryRecord], sink: MetricsSink) -> dict[str, int]:
    """Every retry of a trial by class: the loop's (resamples, replays) and the transport's, sorted by name."""
    counts: Counter[str] = Counter(r.retry_class for r in loop_retries)
    counts.update(sink.transport_retries())
    return dict(sorted(counts.items()))


def usage_record(usage: Usage) -> UsageRecord | None:
    """The call's counters; None when the provider reported no token counts (unknown, never 0 tokens).

    A prompt always has tokens, so all-zero counters are what litellm fills in for a missing block.
    A prompt or completion count the provider reported out of bounds is unknown (None in the
    executor's Usage): the call's tokens are then unknown too, and its ``response_problems`` says why.
    A secondary counter out of bounds (reasoning, cached) adds 0 to the record, named the same way.
    """
    if not has_token_counts(usage) or usage.prompt_tokens is None or usage.completion_tokens is None:
        return None
    # the counters only: asdict would deep-copy the raw usage block first, once per call, to drop it
    return UsageRecord(**{name: getattr(usage, name) or 0 for name in TOKEN_COUNTERS})


class Recorder:
    """What the trajectory will hold; appended to as the loop runs."""

    def __init__(self, secrets: tuple[str, ...] = ()) -> None:
        self.secrets = secrets
        self.messages: list[dict[str, Any]] = []
        self.tool_calls: list[ToolCallRecord] = []
        self.retries: list[RetryRecord] = []
        self.summarize_events: list[SummarizeEvent] = []
        self.guard_events: list[dict[str, Any]] = []
        self.value_substitutions: list[dict[str, Any]] = []
        self.parser_errors: list[ParserErrorRecord] = []
        self.schema_violations: list[dict[str, Any]] = []
        self.unread_output: list[UnreadOutputRecord] = []

    def message(self, message: dict[str, Any]) -> int:
        """Append to the recorded view; returns the message's index."""
        self.messages.append(message)
        return len(self.messages) - 1

    def marker(self, text: str, origin: str) -> int:
        """A role=system marker in the recorded view only (the wire never sees it), tagged with its origin."""
        return self.message({"role": "system", "content": text, ORIGIN: origin})

    def retry(self, retry_class: str, turn: int, attempt: int, detail: str = "") -> None:
        self.retries.append(RetryRecord(retry_class=retry_class, turn=turn, attempt=attempt,
                                        detail=scrub(detail, self.secrets)[:2000]))

    def generation(self, result: GenerationResult, turn: int) -> None:
        """Side records every generation carries (value substitutions, schema violations, argument repairs)."""
        for sub in result.value_substitutions:
            self.value_substitutions.append({"turn": turn, **_json(sub)})
        for violation in result.validation_errors:
            self.schema_violations.append({"turn": turn, **asdict(violation)})
        for repair in result.argument_repairs:
            # a repaired call is executed as decoded; it is still a parser event, with what the model sent
            self.parser_errors.append(ParserErrorRecord(
                turn=turn, tool_name=repair.tool_name, raw_arguments=scrub(repair.raw_arguments, self.secrets),
                reason=f"arguments were not JSON; the {repair.rung} rung decoded them and the call ran (graders "
                       "read what was sent: the message's sent_arguments)",
                accepted=True, repair_rung=repair.rung))

    def unread(self, role: Literal["agent", "summarize"], turn: int, answer: Any) -> None:
        """The output items of ``answer`` (a Responses answer the executor could not read) it does not read, whole.

        The error that refused the answer quotes only the first item's beginning; the record keeps each
        such item entire, so what the model did (a hosted tool's call) is never lost.
        """
        output = answer.get("output") if isinstance(answer, dict) else None
        for index, item in enumerate(output if isinstance(output, list) else ()):
            kind = item.get("type") if isinstance(item, dict) else None
            if kind not in KNOWN_ITEMS:
                try:
                    shown = _scrubbed(item, self.secrets) if isinstance(item, dict) else {"value": _scrubbed(item, self.secrets)}
                except RecursionError:
                    # a hostile answer nested past what can be walked (repr and json would fail alike)
                    shown = {"type": scrub(str(kind), self.secrets), "unrecorded": NESTED_TOO_DEEP}
                self.unread_output.append(UnreadOutputRecord(turn=turn, role=role, index=index, item=shown))


#: what the record says of an unread item nested too deeply to walk
NESTED_TOO_DEEP = "the item is nested too deeply to record; the call's error quotes its beginning"


def _scrubbed(value: Any, secrets: tuple[str, ...]) -> Any:
    """``value`` with every string in it scrubbed of credentials (keys and nesting kept)."""
    if isinstance(value, str):
        return scrub(value, secrets)
    if isinstance(value, dict):
        return {scrub(str(key), secrets): _scrubbed(item, secrets) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrubbed(item, secrets) for item in value]
    return value


def _json(record: Any) -> dict[str, Any]:
    if hasattr(record, "model_dump"):
        data: dict[str, Any] = record.model_dump(mode="json")
        return data
    return dict(asdict(record))


Role = Literal["agent", "summarize", "user", "judge"]

#: The trajectory-only key naming who wrote a harness-authored message (feedback turns, markers,
#: the summary); the wire copy of a message never has it.
ORIGIN = "origin"
#: The trajectory-only key of an assistant message's OpenRouter generation id.
GENERATION_ID = "openrouter_generation_id"
#: The trajectory-only key of an assistant message's tool-call argument texts exactly as the model sent
#: them (``{tool call id: text}``), for each call whose text is not the JSON its ``arguments`` hold: a
#: repaired (or {}-coerced) payload, or arguments the response policy changed. The call ran with, and
#: the wire carries, ``arguments``; a grader that judges what the model sent reads this.
SENT_ARGUMENTS = "sent_arguments"
#: Keys a recorded message may carry that no request ever does.
TRAJECTORY_ONLY_KEYS = (ORIGIN, GENERATION_ID, SENT_ARGUMENTS)


def wire_message(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` without its trajectory-only keys: what a request (the agent's or the simulator's) may carry."""
    if not any(k in message for k in TRAJECTORY_ONLY_KEYS):
        return message
    return {k: v for k, v in message.items() if k not in TRAJECTORY_ONLY_KEYS}


class MetricsSink:
    """Every provider attempt the trial paid for, one :class:`CallRecord` each.

    Each record also goes to the run's call journal (``log``; by default the log of the trial running
    in this thread, see :func:`capplan.trials.run_folder.call_journal.journalled`) the moment it is made, so a
    process that dies mid-trial leaves those calls in ``calls.jsonl``.
    """

    def __init__(self, log: CallLog | None = None) -> None:
        self.calls: list[CallRecord] = []
        self.log = log if log is not None else current_log()
        #: what the agent's first answered request carried as its system prompt (the trajectory keeps it)
        self.effective_system_prompt: str | None = None
        self.last_prompt_tokens: int | None = None
        # the loop's own backoff (the API-error replay) is charged to the next attempt's wait_s
        self._pending_wait = 0.0
        # attempts already sent for the call under way: a loop replay numbers its sends on from them
        self._attempt_base = 0
        self._last_sent = 0

    def replaying(self) -> None:
        """The loop sends the call that just failed again: its attempts are numbered on from that call's."""
        self._attempt_base = self._last_sent

    def _numbering(self, sent: int) -> int:
        """The number of this call's first attempt; ``sent`` attempts are now on the record."""
        base, self._attempt_base = self._attempt_base, 0
        self._last_sent = base + sent
        return base + 1

    @contextmanager
    def sending(self, role: Role, turn: int) -> Iterator[None]:
        """The calls made inside the block journal each send (``role``, ``turn``) before it goes out."""
        log = self.log
        if log is None:
            yield
            return

        def observe(send: Send) -> None:
            log.send(role, turn, send)

        with observing_sends(observe):
            yield

    def waited(self, seconds: float) -> None:
        """The loop slept ``seconds`` before its next call: the wait goes on that call's first attempt."""
        self._pending_wait += seconds

    def call(self, role: Role, turn: int, result: GenerationResult) -> CallRecord:
        """Record a generation: its failed attempts, then the one that answered (returned)."""
        attempts = result.attempts or (Attempt(status="ok", wait_s=result.wait_s, latency_s=result.latency_s,
                                               key_index=result.key_index),)
        route, kind = result.gateway_route, result.gateway_route_kind
        first = self._numbering(len(attempts))
        for number, attempt in enumerate(attempts[:-1], start=first):
            self._add(self._error(role, turn, number, attempt, route, kind, retried=True), attempt.request_id)
        last = attempts[-1]
        record = CallRecord(
            role=role, turn=turn, outcome="accepted", status="ok", attempt=first + len(attempts) - 1,
            usage=usage_record(result.usage), cost_usd=result.cost_usd, cost_source=result.cost_source,
            wait_s=self._take_wait(last.wait_s), latency_s=last.latency_s, finish_reason=result.finish_reason,
            openrouter_generation_id=result.openrouter_generation_id, response_id=result.response_id,
            gateway_route=route, gateway_route_kind=kind,
            key_index=result.key_index, response_problems=list(result.response_problems),
        )
        self._add(record, last.request_id)
        if role == "agent":
            self.last_prompt_tokens = result.usage.prompt_tokens  # None (unknown): no watermark check on it
            if self.effective_system_prompt is None:
                self.effective_system_prompt = result.effective_system_prompt
        return record

    def failed(self, role: Role, turn: int, exc: BaseException | None = None,
               route: tuple[str | None, str | None] = (None, None)) -> None:
        """A call that raised: every attempt it made is on the record, each ``failed``.

        ``route`` is the client's gateway route and kind (a raised call has no result to carry them).
        A call that raised before reaching the provider (a missing credential, a request that could not be
        built: no attempt on its log) is one record with no latency, and known to have cost nothing
        (``cost_source: none``); every attempt that went to the transport is of unknown cost and usage,
        as the provider reported neither.
        """
        attempts = attempts_of(exc) if exc is not None else ()
        if not attempts and isinstance(exc, Terminal):
            return  # the harness stopped the call before it was sent (a spent --max-cost): nothing was called
        if not attempts:
            unsent = Attempt(status="error", wait_s=0.0, latency_s=0.0,
                             error_type=type(exc).__name__ if exc is not None else None)
            self._add(self._error(role, turn, self._numbering(1), unsent, *route, retried=False).model_copy(
                update={"usage": UsageRecord(), "cost_usd": 0.0, "cost_source": "none"}))
            return
        first = self._numbering(len(attempts))
        last = first + len(attempts) - 1
        for number, attempt in enumerate(attempts, start=first):
            # every attempt but the last was sent again by the transport's retry controllers
            record = self._error(role, turn, number, attempt, *route, retried=number < last)
            if number == last and isinstance(exc, UnknownOutputItemError) and exc.usage is not None:
                # answered, billed, and refused only for an item capplan cannot read: its figures are known
                record = record.model_copy(update={"usage": usage_record(exc.usage), "cost_usd": exc.cost_usd,
                                                   "cost_source": exc.cost_source})
            self._add(record, attempt.request_id)

    def _add(self, record: CallRecord, request_id: str | None = None) -> None:
        self.calls.append(record)
        if self.log is not None:
            self.log.record(record, request_id)

    def _error(self, role: Role, turn: int, number: int, attempt: Attempt, route: str | None,
               kind: str | None, *, retried: bool) -> CallRecord:
        return CallRecord(
            role=role, turn=turn, outcome="failed", status="error", error_class=attempt.error_class,
            error_type=attempt.error_type, attempt=number, usage=None, cost_usd=None, cost_source="unknown",
            retry_class=transport_retry_class(attempt.error_class) if retried else None,
            wait_s=self._take_wait(attempt.wait_s), latency_s=attempt.latency_s, gateway_route=route,
            gateway_route_kind=kind,
            key_index=attempt.key_index, retry_after_s=attempt.retry_after_s,
        )

    def transport_retries(self) -> Counter[str]:
        """The transport's retries by class: each failed attempt the controllers sent again."""
        return Counter(c.retry_class for c in self.calls
                       if c.status == "error" and c.retry_class is not None and c.retry_class.startswith(TRANSPORT_RETRY))

    def _take_wait(self, wait_s: float) -> float:
        wait, self._pending_wait = wait_s + self._pending_wait, 0.0
        return wait

    def generation_ids(self) -> list[str]:
        """The OpenRouter generation ids of the trial's calls, in call order (the spec's trial-level list)."""
        return [c.openrouter_generation_id for c in self.calls if c.openrouter_generation_id]

    def latency(self) -> float:
        """Every attempt's round trip plus every backoff wait: the time the trial spent on its provider calls."""
        return sum(c.latency_s + c.wait_s for c in self.calls)

    def wait(self) -> float:
        """The backoff waits inside :meth:`latency`."""
        return sum(c.wait_s for c in self.calls)

    def usage(self, *roles: Role) -> UsageRecord | None:
        """The roles' summed counters; None when a call of theirs reported none (see :func:`known_usage`)."""
        return known_usage(self.calls, roles)

    def cost(self, *roles: Role) -> float:
        """The known part of the roles' spend (what a budget can count; an unknown cost adds nothing)."""
        return sum(c.cost_usd or 0.0 for c in self.calls if c.role in roles)

    def cost_source(self, *roles: Role) -> str:
        return cost_source(self.calls, roles)
