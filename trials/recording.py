"""The trial's recorder and metrics sink.

The recorder keeps the recorded view of the conversation (the full history, summarise and
terminal markers included) and the side records the trajectory carries. The sink keeps one
:class:`~trials.records.CallRecord` per provider call the trial paid for, resampled and
discarded generations included, and the last agent prompt size the watermark check reads.
Every text that reaches a record passes :func:`scrub`, so no credential value is written.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict
from typing import Any, Literal

from executor.result import GenerationResult
from executor.usage import Usage
from trials.records import (
    CallRecord,
    ParserErrorRecord,
    RetryRecord,
    SummarizeEvent,
    ToolCallRecord,
    UsageRecord,
)

_KEYISH = re.compile(r"\b(sk-[A-Za-z0-9_-]{6,}|Bearer\s+[A-Za-z0-9._-]{6,})")


def scrub(text: str, secrets: tuple[str, ...] = ()) -> str:
    """``text`` with credential-looking tokens and the given secret values redacted."""
    for secret in secrets:
        if len(secret) >= 4:
            text = text.replace(secret, "<redacted>")
    return _KEYISH.sub("<redacted>", text)


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
