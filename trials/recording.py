"""The trial's recorder and metrics sink.

The recorder keeps the recorded view of the conversation (the full history, summarise and
terminal markers included) and the side records the trajectory carries. The sink keeps one
:class:`~capplan.trials.records.CallRecord` per provider call the trial paid for, resampled and
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
from dataclasses import asdict
from typing import Any, Literal

from capplan.core.redaction import Redactor, process_redactor
from capplan.executor.result import GenerationResult
from capplan.executor.usage import Usage
from capplan.trials.records import (
    CallRecord,
    ParserErrorRecord,
    RetryRecord,
    SummarizeEvent,
    ToolCallRecord,
    UsageRecord,
)
from capplan.trials.spec import TrialRecords

_KEYISH = re.compile(r"\b(sk-[A-Za-z0-9_-]{6,}|Bearer\s+[A-Za-z0-9._-]{6,})")


def scrub(text: str, secrets: tuple[str, ...] = ()) -> str:
    """``text`` with every known credential value, the given ``secrets`` and credential-looking tokens redacted."""
    text = process_redactor().text(text)
    for secret in secrets:
        if len(secret) >= 4:
            text = text.replace(secret, "<redacted>")
    return _KEYISH.sub("<redacted>", text)


def redact_records(records: TrialRecords, redactor: Redactor | None = None) -> TrialRecords:
    """``records`` with every known credential value replaced in the trajectory, the metrics and the probe census.

    By value only: the shape net of :func:`scrub` stays on the texts it already covers (errors, tool
    output), as over a whole conversation it would rewrite prose. The model's own text is included:
    a provider that echoes the headers it was sent puts them in the completion. Left as they are: each file's ``trial`` identity block and the runs.jsonl
    line, which hold only names, digests, enums and numbers taken from the run's own files (and
    index the run folder: a task id that happened to equal a literal gateway header value must
    still resume).
    """
    redactor = redactor if redactor is not None else process_redactor()

    def clean(data: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {k: v if k == "trial" else redactor.value(v) for k, v in data.items()}
        return out

    return dataclasses.replace(
        records, trajectory=clean(records.trajectory), metrics=clean(records.metrics),
        probe=clean(records.probe) if records.probe is not None else None,
    )


def secret_values(env_names: tuple[str | None, ...]) -> tuple[str, ...]:
    """The current values of the named credential variables (to scrub, never to record)."""
    return tuple(v for n in env_names if n for v in [os.environ.get(n, "")] if v)


def usage_record(usage: Usage) -> UsageRecord:
    data = asdict(usage)
    data.pop("provider_raw", None)
    return UsageRecord(**data)


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

    def message(self, message: dict[str, Any]) -> int:
        """Append to the recorded view; returns the message's index."""
        self.messages.append(message)
        return len(self.messages) - 1

    def marker(self, text: str) -> int:
        """A role=system marker in the recorded view only (the wire never sees it)."""
        return self.message({"role": "system", "content": text})

    def retry(self, retry_class: str, turn: int, attempt: int, detail: str = "") -> None:
        self.retries.append(RetryRecord(retry_class=retry_class, turn=turn, attempt=attempt,
                                        detail=scrub(detail, self.secrets)[:2000]))

    def generation(self, result: GenerationResult, turn: int) -> None:
        """Side records every generation carries (value substitutions, schema violations)."""
        for sub in result.value_substitutions:
            self.value_substitutions.append({"turn": turn, **_json(sub)})
        for violation in result.validation_errors:
            self.schema_violations.append({"turn": turn, **asdict(violation)})


def _json(record: Any) -> dict[str, Any]:
    if hasattr(record, "model_dump"):
        data: dict[str, Any] = record.model_dump(mode="json")
        return data
    return dict(asdict(record))


Role = Literal["agent", "summarize", "user"]


class MetricsSink:
    """Every call the trial paid for."""

    def __init__(self) -> None:
        self.calls: list[CallRecord] = []
        self.last_prompt_tokens: int | None = None

    def call(self, role: Role, turn: int, result: GenerationResult) -> CallRecord:
        record = CallRecord(
            role=role, turn=turn, outcome="accepted", usage=usage_record(result.usage), cost_usd=result.cost_usd,
            cost_source=result.cost_source, latency_s=result.latency_s, finish_reason=result.finish_reason,
        )
        self.calls.append(record)
        if role == "agent":
            self.last_prompt_tokens = result.usage.prompt_tokens
        return record

    def failed(self, role: Role, turn: int) -> None:
        """A call that raised: no usage came back, but the attempt is on the record."""
        self.calls.append(CallRecord(role=role, turn=turn, outcome="failed", usage=UsageRecord(), cost_usd=None,
                                     cost_source="unknown", latency_s=0.0))

    def usage(self, *roles: Role) -> UsageRecord:
        total = UsageRecord()
        for call in self.calls:
            if call.role in roles:
                total = UsageRecord(**{k: getattr(total, k) + getattr(call.usage, k) for k in UsageRecord.model_fields})
        return total

    def cost(self, *roles: Role) -> float:
        return sum(c.cost_usd or 0.0 for c in self.calls if c.role in roles)

    def cost_source(self, *roles: Role) -> str:
        sources = {c.cost_source for c in self.calls if c.role in roles and c.outcome != "failed"}
        if not sources:
            return "none"
        return sources.pop() if len(sources) == 1 else "mixed"
