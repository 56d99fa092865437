"""A call's usage record carries every counter of the executor's Usage, and only the counters."""

from __future__ import annotations

import json
from dataclasses import fields

from capplan.executor.usage import TOKEN_COUNTERS, Usage
from capplan.trials.run_folder.recording import usage_record
from capplan.trials.run_folder.records import UsageRecord


def test_every_usage_counter_reaches_the_record() -> None:
    counters = [f.name for f in fields(Usage) if f.name != "provider_raw"]
    assert set(counters) == set(UsageRecord.model_fields)  # a counter added to one must be added to the other
    usage = Usage(**{name: index + 1 for index, name in enumerate(counters)}, provider_raw={"prompt_tokens": 1})
    assert usage_record(usage).model_dump() == {name: index + 1 for index, name in enumerate(counters)}


def test_the_record_declares_the_one_counter_list_in_its_order() -> None:
    # UsageRecord's JSON keys follow its declaration; the one list of names is TOKEN_COUNTERS
    assert tuple(UsageRecord.model_fields) == TOKEN_COUNTERS
    assert TOKEN_COUNTERS == tuple(f.name for f in fields(Usage) if f.name != "provider_raw")
    record = usage_record(Usage(prompt_tokens=3, completion_tokens=2))
    assert record is not None
    assert list(json.loads(record.model_dump_json())) == list(TOKEN_COUNTERS)


def test_sum_and_unknown_cover_every_counter() -> None:
    # the last counter in the list too: a None there is unknown, alone and in any sum it is part of
    last = TOKEN_COUNTERS[-1]
    unknown_last = Usage(**{last: None})
    assert unknown_last.unknown() == (last,)
    assert getattr(Usage(**dict.fromkeys(TOKEN_COUNTERS, 1)) + unknown_last, last) is None
    total = Usage(**dict.fromkeys(TOKEN_COUNTERS, 1)) + Usage(**dict.fromkeys(TOKEN_COUNTERS, 2))
    assert [getattr(total, name) for name in TOKEN_COUNTERS] == [3] * len(TOKEN_COUNTERS)
