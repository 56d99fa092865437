"""The records' YAML rendered on the helper process: the same bytes, never a new way to fail."""

from __future__ import annotations

import enum
import os
import random
import signal
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from capplan.trials.run_folder import render_process
from capplan.trials.run_folder.record_yaml import dump_records_yaml
from capplan.trials.run_folder.render_process import RecordRenderer
from tests.trials.test_record_yaml import _tree
from tests.cli_runner import invoke

TRAJECTORY = {"messages": [{"role": "user", "content": "add one ünïcødé 🙂"},
                           {"role": "assistant", "content": None, "tool_calls": [
                               {"id": "call_1", "name": "add", "arguments": {"amount": 1}}]},
                           {"role": "tool", "tool_call_id": "call_1", "content": "word " * 60}],
              "usage": {"input_tokens": 12, "output_tokens": 3, "cost_usd": None}}


#: the bound a run uses (the tests below send everything to the helper unless they restore it)
HERE_MAX_TEXT = render_process.HERE_MAX_TEXT

#: how long a test waits for a helper (or a stand-in) to start: generous, a loaded 2-core machine
#: can take seconds to start an interpreter; a test that passes never waits this long
HELPER_START_TIMEOUT_S = 120.0


@pytest.fixture(autouse=True)
def everything_to_the_helper(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about the helper: no document is written in this process unless they say so."""
    monkeypatch.setattr(render_process, "HERE_MAX_TEXT", -1)


def _long(text_chars: int) -> dict[str, Any]:
    """A trajectory whose strings hold ``text_chars`` characters in all."""
    return {"messages": [{"role": "user", "content": "x" * (text_chars - len("user"))}]}


@pytest.mark.fast_side
def test_short_documents_are_written_here_and_never_start_the_helper(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(render_process, "HERE_MAX_TEXT", HERE_MAX_TEXT)
    renderer = RecordRenderer()
    try:
        documents = [TRAJECTORY, {"usage": {"input_tokens": 1}}, _long(HERE_MAX_TEXT)]
        assert renderer.render(documents) == [dump_records_yaml(d) for d in documents]
        assert (renderer.rendered_here, renderer.rendered_by_helper) == (3, 0)
        assert renderer._process is None and renderer.gave_up is None  # never started
    finally:
        renderer.close()


@pytest.mark.fast_side
def test_a_long_document_starts_the_helper_and_goes_to_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(render_process, "HERE_MAX_TEXT", HERE_MAX_TEXT)
    long = _long(HERE_MAX_TEXT + 1)
    renderer = RecordRenderer()
    try:
        # the first long document starts the helper; a run does not wait for it: that one is written here
        assert renderer.render([long]) == [dump_records_yaml(long)]
        assert renderer._process is not None and renderer.rendered_here == 1
        assert renderer.wait_ready(HELPER_START_TIMEOUT_S), f"the helper never said it was ready ({renderer.gave_up})"
        shared = {"a": [1]}
        documents = [TRAJECTORY, long, {"x": shared, "y": shared}, {"usage": None}]  # an alias: PyYAML's, on the helper
        assert renderer.render(documents) == [dump_records_yaml(d) for d in documents]
        assert (renderer.rendered_here, renderer.rendered_by_helper) == (1 + 2, 2)
    finally:
        renderer.close()


@pytest.fixture
def renderer() -> Iterator[RecordRenderer]:
    made = RecordRenderer()
    try:
        # it renders here while the helper is still starting: these tests are about the helper
        assert made.wait_ready(HELPER_START_TIMEOUT_S), f"the helper never said it was ready ({made.gave_up})"
        yield made
    finally:
        made.close()


@pytest.mark.fast_side
def test_the_helper_renders_the_same_bytes(renderer: RecordRenderer) -> None:
    shared = {"a": [1, 2]}
    documents: list[Any] = [TRAJECTORY, {"x": shared, "y": shared}, [], {}, "just text", None,
                            *(_tree(random.Random(seed), 6) for seed in range(30))]
    before = renderer.rendered_by_helper
    assert renderer.render(documents) == [dump_records_yaml(d) for d in documents]
    assert renderer.rendered_by_helper == before + len(documents)
    assert renderer.gave_up is None


@pytest.mark.fast_side
def test_a_document_of_more_than_plain_data_is_rendered_here(renderer: RecordRenderer, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # a class from a module a task folder could hold: unpickling it in the helper would import that module
    marker = tmp_path / "imported-by.txt"
    (tmp_path / "task_values.py").write_text(textwrap.dedent(f"""
        import os
        with open({str(marker)!r}, "a") as f:
            f.write(str(os.getpid()) + "\\n")

        class Colour(str):
            pass
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    import task_values  # type: ignore[import-not-found]

    class Level(enum.IntEnum):
        LOW = 1

    by_helper = renderer.rendered_by_helper
    # refused by the helper (a global) and by PyYAML here: the error is the one rendering here raises
    with pytest.raises(yaml.representer.RepresenterError):
        renderer.render([{"colour": task_values.Colour("red")}])
    with pytest.raises(yaml.representer.RepresenterError):
        renderer.render([{"level": Level.LOW}])  # not even picklable (a local class)
    assert renderer.rendered_by_helper == by_helper
    assert marker.read_text().split() == [str(os.getpid())]  # imported here only, never by the helper
    assert renderer.gave_up is None
    assert renderer.render([TRAJECTORY]) == [dump_records_yaml(TRAJECTORY)]  # and it goes on rendering


@pytest.mark.fast_side
def test_a_helper_that_dies_is_given_up_and_rendering_goes_on_here(renderer: RecordRenderer) -> None:
    process = renderer._process
    assert process is not None
    process.kill()
    process.wait(timeout=HELPER_START_TIMEOUT_S)
    assert renderer.render([TRAJECTORY]) == [dump_records_yaml(TRAJECTORY)]
    assert renderer.gave_up is not None and "failed" in renderer.gave_up
    here = renderer.rendered_here
    assert renderer.render([TRAJECTORY, {"b": 2}]) == [dump_records_yaml(TRAJECTORY), dump_records_yaml({"b": 2})]
    assert renderer.rendered_here == here + 2


@pytest.mark.fast_side
def test_ctrl_c_does_not_stop_the_helper_and_closing_does(renderer: RecordRenderer,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # closing kills a helper that has not exited within CLOSE_TIMEOUT_S: a loaded machine may take longer
    monkeypatch.setattr(render_process, "CLOSE_TIMEOUT_S", HELPER_START_TIMEOUT_S)
    process = renderer._process
    assert process is not None
    os.kill(process.pid, signal.SIGINT)  # what a terminal's Ctrl-C sends the whole process group
    # no sleep needed: the signal is pending before the request is written, and the helper (blocked
    # reading its input) acts on it before it can read the request, so a helper that Ctrl-C stopped
    # never answers this exchange
    before = renderer.rendered_by_helper
    assert renderer.render([TRAJECTORY]) == [dump_records_yaml(TRAJECTORY)]
    assert renderer.rendered_by_helper == before + 1
    renderer.close()
    assert process.returncode == 0  # it left on its own once its input closed
    assert renderer.render([TRAJECTORY]) == [dump_records_yaml(TRAJECTORY)]  # closed: rendered here


def test_the_helper_gets_no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-the-helper")
    monkeypatch.setenv("PYTHONPATH", "/somewhere/else")
    env = render_process._helper_environment()
    assert "OPENAI_API_KEY" not in env
    parts = env["PYTHONPATH"].split(os.pathsep)
    import capplan

    assert parts[0] == str(Path(capplan.__file__).resolve().parent.parent) and "/somewhere/else" in parts


def _stand_in(monkeypatch: pytest.MonkeyPatch, source: str) -> None:
    """The helper replaced by a script that misbehaves as ``source`` says."""
    monkeypatch.setattr(render_process, "HELPER_ARGS", ("-c", textwrap.dedent(source)))


def _given_up_on_its_first_request(renderer: RecordRenderer) -> None:
    """The stand-in says it is ready, is sent one request, and is given up on; the records render here."""
    assert renderer.wait_ready(HELPER_START_TIMEOUT_S), f"the stand-in never said it was ready ({renderer.gave_up})"
    assert renderer.render([TRAJECTORY]) == [dump_records_yaml(TRAJECTORY)]
    assert renderer.gave_up is not None and renderer.rendered_by_helper == 0 and renderer.rendered_here == 1


@pytest.mark.fast_side
def test_a_helper_that_is_not_ready_is_not_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    _stand_in(monkeypatch, "import sys; sys.stdin.buffer.read()")  # never says it is ready, never exits
    # a renderer that waited for readiness at all would wait on this deadline: an hour, not the bound below
    monkeypatch.setattr(render_process, "EXCHANGE_TIMEOUT_S", 3600.0)
    renderer = RecordRenderer()
    rendered: list[list[bytes]] = []
    renders = threading.Thread(target=lambda: rendered.extend(renderer.render([TRAJECTORY]) for _ in range(5)),
                               daemon=True)
    try:
        renders.start()
        renders.join(timeout=HELPER_START_TIMEOUT_S)
        assert not renders.is_alive(), "rendering waited for a helper that is not ready"
        assert rendered == [[dump_records_yaml(TRAJECTORY)]] * 5
        assert renderer.rendered_here == 5 and renderer.rendered_by_helper == 0 and renderer.gave_up is None
    finally:
        if renderer._process is not None:
            renderer._process.kill()  # ends a wait for its answer, should the thread above be stuck in one
        renders.join(timeout=HELPER_START_TIMEOUT_S)
        renderer.close()


@pytest.mark.fast_side
def test_waiting_for_a_helper_that_never_gets_ready_ends_at_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    _stand_in(monkeypatch, "import sys; sys.stdin.buffer.read()")  # never says it is ready
    renderer = RecordRenderer()
    try:
        assert renderer.wait_ready(0.2) is False  # never ready: any bound is reached, however short
        assert renderer.gave_up is None  # not a failure: the run goes on rendering here, as while it starts
        assert renderer.render([TRAJECTORY]) == [dump_records_yaml(TRAJECTORY)] and renderer.rendered_here == 1
    finally:
        renderer.close()


@pytest.mark.fast_side
@pytest.mark.parametrize(("source", "why"), [
    ("import sys; sys.stdout.buffer.write(b'X'); sys.stdout.buffer.flush(); sys.stdin.buffer.read()",
     "did not say it was ready"),
    ("pass", "it exited"),
])
def test_waiting_for_a_helper_that_fails_to_get_ready_gives_it_up(monkeypatch: pytest.MonkeyPatch,
                                                                  source: str, why: str) -> None:
    _stand_in(monkeypatch, source)
    renderer = RecordRenderer()
    try:
        assert renderer.wait_ready(HELPER_START_TIMEOUT_S) is False
        assert why in (renderer.gave_up or "") and renderer._process is None
        assert renderer.render([TRAJECTORY]) == [dump_records_yaml(TRAJECTORY)] and renderer.rendered_here == 1
    finally:
        renderer.close()


def test_a_helper_that_could_not_start_or_was_closed_is_never_ready(monkeypatch: pytest.MonkeyPatch) -> None:
    closed = RecordRenderer()
    closed.close()
    assert closed.wait_ready(HELPER_START_TIMEOUT_S) is False
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    renderer = RecordRenderer()
    assert renderer.wait_ready(HELPER_START_TIMEOUT_S) is False and renderer.gave_up is not None
    renderer.close()


@pytest.mark.fast_side
def test_a_garbled_answer_is_given_up_on(monkeypatch: pytest.MonkeyPatch) -> None:
    _stand_in(monkeypatch, """
        import sys
        out = sys.stdout.buffer
        out.write(b"R"); out.flush()
        sys.stdin.buffer.read(8)
        out.write(bytes([0]) + (5).to_bytes(8, "big") + b"xxxxx"); out.flush()
        sys.stdin.buffer.read()
    """)
    renderer = RecordRenderer()
    try:
        _given_up_on_its_first_request(renderer)
        assert "cut short" in (renderer.gave_up or "")
    finally:
        renderer.close()


@pytest.mark.fast_side
def test_a_helper_that_does_not_answer_is_given_up_on_in_time(monkeypatch: pytest.MonkeyPatch) -> None:
    _stand_in(monkeypatch, """
        import sys, time
        sys.stdout.buffer.write(b"R"); sys.stdout.buffer.flush()
        time.sleep(60)
    """)
    monkeypatch.setattr(render_process, "EXCHANGE_TIMEOUT_S", 0.5)
    renderer = RecordRenderer()
    try:
        _given_up_on_its_first_request(renderer)
        # its deadline ended the wait, not its exit a minute later (which would say "it exited")
        assert "in time" in (renderer.gave_up or "")
    finally:
        renderer.close()


@pytest.mark.fast_side
def test_a_helper_that_cannot_start_leaves_rendering_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    renderer = RecordRenderer()
    assert renderer.render([TRAJECTORY]) == [dump_records_yaml(TRAJECTORY)]  # the first document starts it
    assert renderer.gave_up is not None and "could not be started" in renderer.gave_up
    assert renderer.rendered_here == 1
    renderer.close()


def _run_many_trials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, wait_for_the_helper: bool) -> RecordRenderer:
    """``trial run`` of just enough short trials for a renderer; the one it made (files checked)."""
    from tests.trials.helpers import write_task
    from tests.trials.test_cli_offline import MOCK_PLAN

    made: list[RecordRenderer] = []
    ready: list[bool] = []
    original = RecordRenderer.__init__

    def spy(self: RecordRenderer) -> None:
        original(self)
        made.append(self)
        if wait_for_the_helper:
            # the run renders in-process while the helper starts, so a run that ends before the helper
            # is up (a loaded machine) would render nothing through it: wait for it, bounded, first
            ready.append(self.wait_ready(HELPER_START_TIMEOUT_S))

    monkeypatch.setattr(RecordRenderer, "__init__", spy)
    task = write_task(tmp_path / "pack", turns=["add one", "thanks, that's all"])
    done = invoke("trial", "run", str(task), "--plan", str(MOCK_PLAN), "--out", str(tmp_path / "run"),
                  "--trials", str(render_process.MIN_TRIALS), "--concurrency", "4")
    assert done.exit_code == 0, done.output
    assert len(made) == 1 and ready == ([True] if wait_for_the_helper else []), made[0].gave_up
    assert made[0].gave_up is None and made[0]._process is None  # closed when the run ended
    trajectories = list((tmp_path / "run").glob("trials/*/*/*/trajectory.yaml"))
    assert len(trajectories) == render_process.MIN_TRIALS
    for trajectory in trajectories:
        assert dump_records_yaml(yaml.safe_load(trajectory.read_bytes())) == trajectory.read_bytes()
    return made[0]


@pytest.mark.fast_side
def test_a_run_of_many_trials_writes_its_records_through_the_helper(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    renderer = _run_many_trials(tmp_path, monkeypatch, wait_for_the_helper=True)
    # every trial's trajectory.yaml and metrics.yaml went through the helper
    assert (renderer.rendered_by_helper, renderer.rendered_here) == (2 * render_process.MIN_TRIALS, 0)


@pytest.mark.fast_side
def test_a_run_of_short_trials_writes_them_here_and_never_starts_the_helper(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(render_process, "HERE_MAX_TEXT", HERE_MAX_TEXT)
    renderer = _run_many_trials(tmp_path, monkeypatch, wait_for_the_helper=False)
    assert not renderer._started
    assert (renderer.rendered_by_helper, renderer.rendered_here) == (0, 2 * render_process.MIN_TRIALS)


@pytest.mark.fast_side
def test_a_platform_whose_pipes_cannot_be_made_non_blocking_renders_here(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(fd: int, blocking: bool) -> None:
        raise OSError("not on this platform")

    monkeypatch.setattr(render_process.os, "set_blocking", refuse)
    renderer = RecordRenderer()
    assert renderer.wait_ready(0.0) is False  # starts it
    assert renderer.gave_up is not None and "non-blocking" in renderer.gave_up
    assert renderer._process is None  # the helper it started was stopped
    assert renderer.render([TRAJECTORY]) == [dump_records_yaml(TRAJECTORY)]
    renderer.close()


def _serve(requests: bytes) -> bytes:
    import io

    out = io.BytesIO()
    render_process.serve(io.BytesIO(requests), out)
    return out.getvalue()


def _framed(payload: bytes) -> bytes:
    return len(payload).to_bytes(8, "big") + payload


def _replies(answer: bytes) -> list[tuple[int, bytes]]:
    assert answer[:1] == b"R"
    replies, at = [], 1
    while at < len(answer):
        size = int.from_bytes(answer[at + 1: at + 9], "big")
        replies.append((answer[at], answer[at + 9: at + 9 + size]))
        at += 9 + size
    return replies


def test_the_helper_refuses_what_is_not_a_list_of_plain_data_and_goes_on() -> None:
    import pickle

    requests = b"".join(_framed(p) for p in (
        pickle.dumps({"not": "a list"}),
        pickle.dumps([enum.Enum]),  # a global: a class
        pickle.dumps([os.getcwd]),  # a global: a function
        b"\x80\x05not a pickle at all",
        pickle.dumps([TRAJECTORY]),
    ))
    replies = _replies(_serve(requests))
    assert [status for status, _ in replies] == [1, 1, 1, 1, 0]
    assert b"list of documents" in replies[0][1] and b"plain data" in replies[1][1] and b"plain data" in replies[2][1]
    assert replies[4][1] == len(dump_records_yaml(TRAJECTORY)).to_bytes(8, "big") + dump_records_yaml(TRAJECTORY)


@pytest.mark.parametrize("cut", [3, 8, 20])
def test_a_request_cut_short_ends_the_helper_quietly(cut: int) -> None:
    import pickle

    request = _framed(pickle.dumps([TRAJECTORY]))
    assert _serve(request[:cut]) == b"R"  # it answered nothing and returned: the run closed its end
