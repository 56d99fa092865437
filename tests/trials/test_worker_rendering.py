"""A worker process renders its trials' files (seam *worker rendering*); the run's writer only writes the bytes.

The bytes are those the writer would render from the same records. Records the writer's redaction changes,
or that anything else changes on their way (``dataclasses.replace``: a lost attempt noted, an abort), lose
the rendering and are rendered again from what they hold. The reference mode renders in the writer.
"""

from __future__ import annotations

import pickle
from pathlib import Path

from capplan.core.redaction import REDACTED, Redactor
from capplan.trials.backends.processes.pool import _with_lost
from capplan.trials.backends.processes.worker import rendered_here
from capplan.trials.run_folder.folder import RunFolder
from capplan.trials.run_folder.record_yaml import dump_records_yaml
from capplan.trials.run_folder.recording import RecordTexts, record_texts, redact_records
from capplan.trials.runner import RunContext, run_trial
from capplan.trials.spec import TrialRecords
from tests.mode_switch import mode
from tests.trials.helpers import mock_plan, spec_for, write_task

WRITER_ONLY = "sk-known-to-the-writer-only-0002"


def _run(tmp_path: Path, said: str) -> tuple[RunFolder, TrialRecords, RecordTexts]:
    """A mock trial whose user says ``said``, as its worker sends it (redacted by what the worker knows, its texts
    and files made there, through pickle), and the run folder opened for it."""
    spec = spec_for(write_task(tmp_path / "pack", turns=[said]), mock_plan())
    folder = RunFolder(tmp_path / "run")
    folder.open([spec])
    sent = redact_records(run_trial(spec, RunContext()), Redactor())
    arrived: tuple[TrialRecords, RecordTexts] = pickle.loads(pickle.dumps((rendered_here(sent), record_texts(sent))))
    return folder, *arrived


def _written(tmp_path: Path) -> tuple[bytes, bytes]:
    trial = tmp_path / "run" / "trials" / "mock-agent" / "count" / "0"
    return (trial / "trajectory.yaml").read_bytes(), (trial / "metrics.yaml").read_bytes()


@mode(False)
def test_the_workers_bytes_are_the_writers_and_reach_the_files_as_they_are(tmp_path: Path) -> None:
    folder, arrived, texts = _run(tmp_path, "add one")
    assert arrived.rendered == (dump_records_yaml(arrived.trajectory), dump_records_yaml(arrived.metrics))
    kept = redact_records(arrived, Redactor([WRITER_ONLY]), texts=texts)
    assert kept.rendered == arrived.rendered
    folder.write(kept)
    assert _written(tmp_path) == arrived.rendered


@mode(False)
def test_records_the_writer_redacts_are_rendered_again(tmp_path: Path) -> None:
    folder, arrived, texts = _run(tmp_path, f"my key is {WRITER_ONLY}, add one")
    assert arrived.rendered is not None and WRITER_ONLY.encode() in arrived.rendered[0]
    scrubbed = redact_records(arrived, Redactor([WRITER_ONLY]), texts=texts)
    assert scrubbed.rendered is None
    folder.write(scrubbed)
    trajectory, _ = _written(tmp_path)
    assert WRITER_ONLY.encode() not in trajectory and REDACTED.encode() in trajectory
    assert trajectory == dump_records_yaml(scrubbed.trajectory)


@mode(False)
def test_records_changed_on_their_way_are_rendered_from_what_they_hold(tmp_path: Path) -> None:
    folder, arrived, _ = _run(tmp_path, "add one")
    lost = _with_lost(arrived, 1)
    assert lost.rendered is None and lost.metrics["lost_attempts"] == 1
    folder.write(lost)
    assert b"lost_attempts: 1" in _written(tmp_path)[1]


@mode(True)
def test_the_reference_mode_renders_in_the_writer(tmp_path: Path) -> None:
    _, arrived, _ = _run(tmp_path, "add one")
    assert arrived.rendered is None
