"""``run --out o`` writes only its own files, directly in ``o``, never through a link, and alone.

A link planted under a log's name (to a file outside, or dangling) is refused before anything is
sent, and the file outside is left as it was; a folder holding files the harness did not write is
refused (as ``capplan trial run`` refuses one); a folder another ``run`` is writing is refused
naming that run's pid.
"""

from __future__ import annotations

import os

import pytest

from capplan.core import folder_lock

from .fakes.chat import ChatProvider
from .helpers import FAKE_KEY, custom_run, prices_file
from tests.cli_runner import invoke


def _no_traceback(done) -> None:
    assert "Traceback" not in done.err and "internal error" not in done.err


@pytest.mark.parametrize("name", ["calls.jsonl", "cost.jsonl", "runs.jsonl", "cells.jsonl", "errors.log"])
def test_a_link_inside_out_is_refused_and_nothing_is_written_through_it(serve, harness, tmp_path, monkeypatch, name):
    monkeypatch.setenv("FAKE_KEY", FAKE_KEY)
    server = serve(ChatProvider(key=FAKE_KEY))
    out = tmp_path / "out"
    out.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("keep\n")
    (out / name).symlink_to(outside)
    done = harness(*custom_run(server.base, out, prices_file(tmp_path)))
    assert done.code == 2, done.err
    _no_traceback(done)
    assert f"{out / name} is a symbolic link" in done.err and "choose a new --out" in done.err
    assert outside.read_text() == "keep\n"
    assert server.posts() == []


def test_a_dangling_link_inside_out_creates_nothing_outside(serve, harness, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", FAKE_KEY)
    server = serve(ChatProvider(key=FAKE_KEY))
    out = tmp_path / "out"
    out.mkdir()
    target = tmp_path / "elsewhere" / "created.jsonl"
    target.parent.mkdir()
    (out / "runs.jsonl").symlink_to(target)
    done = harness(*custom_run(server.base, out, prices_file(tmp_path)))
    assert done.code == 2, done.err
    _no_traceback(done)
    assert not target.exists()
    assert server.posts() == []


def test_a_link_planted_after_the_check_is_refused_at_the_write(tmp_path):
    from capplan.evals.reasoning_replay.errors import HarnessError
    from capplan.evals.reasoning_replay.store.outdir import OutDir

    out = OutDir(tmp_path / "out")
    try:
        outside = tmp_path / "outside.txt"
        outside.write_text("keep\n")
        (out.path / "cells.jsonl").symlink_to(outside)
        with pytest.raises(HarnessError, match="is a symbolic link"):
            out.cells.append({"cell": "x"})
        assert outside.read_text() == "keep\n"
    finally:
        out.close()


def test_a_folder_of_foreign_files_is_refused(serve, harness, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", FAKE_KEY)
    server = serve(ChatProvider(key=FAKE_KEY))
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    done = harness(*custom_run(server.base, out, prices_file(tmp_path)))
    assert done.code == 2, done.err
    _no_traceback(done)
    assert "holds files this harness did not write (notes.txt)" in done.err and "choose a new --out" in done.err
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    assert server.posts() == []


def test_an_earlier_run_folder_is_resumed(serve, harness, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", FAKE_KEY)
    server = serve(ChatProvider(key=FAKE_KEY))
    out, prices = tmp_path / "out", prices_file(tmp_path)
    assert harness(*custom_run(server.base, out, prices, "--steps", "text")).code == 0
    assert harness("report", "--out", out).code == 0  # its derived files belong to the folder too
    done = harness(*custom_run(server.base, out, prices))
    assert done.code == 0, done.err


def test_a_folder_another_run_is_writing_is_refused_naming_its_pid(serve, harness, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", FAKE_KEY)
    server = serve(ChatProvider(key=FAKE_KEY))
    out = tmp_path / "out"
    out.mkdir()
    held = folder_lock.hold(out)  # another open of the lock file: flock treats it as another writer
    try:
        done = harness(*custom_run(server.base, out, prices_file(tmp_path)))
    finally:
        held.release()
    assert done.code == 2, done.err
    _no_traceback(done)
    assert f"pid {os.getpid()}" in done.err and "writer.lock" in done.err
    assert server.posts() == []
    assert sorted(p.name for p in out.iterdir()) == ["writer.lock"]


def test_capplan_replay_run_is_refused_the_same_way(serve, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", FAKE_KEY)
    server = serve(ChatProvider(key=FAKE_KEY))
    out = tmp_path / "out"
    out.mkdir()
    held = folder_lock.hold(out)
    try:
        done = invoke("replay", *custom_run(server.base, out, prices_file(tmp_path)))
    finally:
        held.release()
    assert done.exit_code == 2, done.output
    assert f"pid {os.getpid()}" in done.output and "Traceback" not in done.output
    assert server.posts() == []
