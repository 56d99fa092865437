"""A worker's records reach the run's writer with the JSON texts its redaction check searches (``record_texts``).

The writer searches those texts for every credential *it* knows instead of encoding the records
again; what it knows and the worker did not is still replaced, and the answer is the one the
writer's own encoding gives, in both modes.
"""

from __future__ import annotations

import pickle

from tests.mode_switch import mode
from capplan.core.redaction import REDACTED, Redactor
from capplan.trials.run_folder.recording import record_texts, redact_records
from capplan.trials.spec import TerminationReason, TrialKey, TrialRecords, TrialStatus

WRITER_ONLY = "sk-known-to-the-writer-only-0001"


def records(text: str, probe: dict[str, object] | None = None) -> TrialRecords:
    return TrialRecords(key=TrialKey("agent", "count", 0), status=TrialStatus.COMPLETED,
                        termination_reason=TerminationReason.USER_STOP, cost_usd=0.0,
                        trajectory={"trial": {"key": "agent/count/0"}, "messages": [{"role": "assistant", "content": text}]},
                        metrics={"trial": {"key": "agent/count/0"}, "calls": [{"error": text, "n": 1.5}]},
                        run_line={"key": "agent/count/0"}, probe=probe)


def test_what_only_the_writer_knows_is_replaced_in_a_workers_records() -> None:
    leaked = records(f"the header was Bearer {WRITER_ONLY}", probe={"note": WRITER_ONLY})
    worker = Redactor()  # the worker's clients never held the writer's credential
    sent = redact_records(leaked, worker, texts=None)
    texts = record_texts(sent)
    # what crosses the channel: pickled records and texts
    arrived, arrived_texts = pickle.loads(pickle.dumps((sent, texts)))
    for reference in (False, True):
        with mode(reference):
            scrubbed = redact_records(arrived, Redactor([WRITER_ONLY]), texts=arrived_texts)
            assert WRITER_ONLY not in repr((scrubbed.trajectory, scrubbed.metrics, scrubbed.probe))
            assert REDACTED in scrubbed.trajectory["messages"][0]["content"]
            assert scrubbed == redact_records(arrived, Redactor([WRITER_ONLY]))  # as its own encoding finds


def test_clean_records_come_back_as_they_are_and_the_texts_are_what_the_check_writes() -> None:
    clean = records('say "hi" = 1 \\ é \n', probe={"calls": 2})
    texts = record_texts(clean)
    with mode(False):
        assert redact_records(clean, Redactor([WRITER_ONLY]), texts=texts).trajectory is clean.trajectory  # not walked
        # a text that holds the credential makes the check walk, whatever the records hold
        assert Redactor([WRITER_ONLY]).may_change(clean.metrics, texts[1] + WRITER_ONLY)
    assert texts[2] is not None and record_texts(records("x")).count(None) == 1  # no probe census, no text
    odd = records("x")
    odd.metrics["set"] = {1}  # not JSON data: no text, and the check walks it
    assert record_texts(odd)[1] is None
