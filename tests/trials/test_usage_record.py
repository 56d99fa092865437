"""A call's usage record carries every counter of the executor's Usage, and only the counters."""

from __future__ import annotations

from dataclasses import fields

from capplan.executor.usage import Usage
from capplan.trials.recording import usage_record
from capplan.trials.records import UsageRecord


def test_every_usage_counter_reaches_the_record() -> None:
    counters = [f.name for f in fields(Usage) if f.name != "provider_raw"]
    assert set(counters) == set(UsageRecord.model_fields)  # a counter added to one must be added to the other
    usage = Usage(**{name: index + 1 for index, name in enumerate(counters)}, provider_raw={"prompt_tokens": 1})
    assert usage_record(usage).model_dump() == {name: index + 1 for index, name in enumerate(counters)}
