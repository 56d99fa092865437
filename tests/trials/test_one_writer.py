"""One writer per run folder: a second ``trial run`` (or the Python API) on a folder being written is refused.

The first run is a real ``capplan trial run`` in a child process whose agent call the loopback
server holds until the test lets it go, so it is certainly still running (and holding the
folder) when the second one starts. Every wait is bounded; nothing depends on speed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from capplan.core import folder_lock
from capplan.core.confined_write import ConfinedPathError
from capplan.trials.run_folder.folder import RunFolderError
from tests.fake_provider import FakeProvider, agent_answer, on_body
from tests.trials.helpers import openai_plan, write_task
from tests.cli_runner import invoke

WAIT_S = 120.0


class HeldAgent(FakeProvider):
    """The default agent, whose answers wait until ``answer_now`` is set; ``arrived`` is set by the first request."""

    def __init__(self) -> None:
        self.arrived = threading.Event()
        self.answer_now = threading.Event()  # not `release`: FakeProvider.release() answers held requests
        super().__init__(on_body(self._answer))

    def _answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        self.arrived.set()
        self.answer_now.wait(WAIT_S)  # bounded: a failed test still ends
        return agent_answer(body)


@pytest.fixture
def held() -> Iterator[HeldAgent]:
    with HeldAgent() as srv:
        try:
            yield srv
        finally:
            srv.answer_now.set()  # the handler threads end before the server stops


def _command(task: Path, plan: Path, out: Path, base: str) -> list[str]:
    return [sys.executable, "-c", "from capplan.cli import main; main()", "trial", "run", str(task), "--plan", str(plan),
            "--out", str(out), "--trials", "2", "--concurrency", "1", "--api-base", base]


def _env() -> dict[str, str]:
    env = {**os.environ, "OPENAI_API_KEY": "sk-one-writer-key", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env.pop("LLM_PROXY_BASE_URL", None)
    return env


def test_a_second_run_of_a_folder_being_written_is_refused_naming_the_pid(held: HeldAgent, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    task = write_task(tmp_path / "pack", turns=["add one", "thanks"])
    plan = tmp_path / "agent.json"
    plan.write_bytes(openai_plan().to_bytes())
    out = tmp_path / "both"
    first = subprocess.Popen(_command(task, plan, out, held.base), env=_env(), stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    try:
        assert held.arrived.wait(WAIT_S), "the first run never called the agent"
        assert first.poll() is None
        second = subprocess.run(_command(task, plan, out, held.base), env=_env(), capture_output=True, timeout=WAIT_S)
        err = second.stderr.decode()
        assert second.returncode == 2, err
        assert f"{out / 'writer.lock'}:1:1: error[folder-busy]" in err
        assert f"pid {first.pid}" in err and "hint:" in err and "Traceback" not in err
        assert len(held.bodies()) == 1  # the refused run called no one

        from capplan.trials import api  # the Python API takes the same lock

        monkeypatch.setenv("OPENAI_API_KEY", "sk-one-writer-key")
        monkeypatch.delenv("LLM_PROXY_BASE_URL", raising=False)

        with pytest.raises(RunFolderError, match=f"pid {first.pid}"):
            api.run([task], [plan], out=out, trials=2, concurrency=1, api_base=held.base)
        assert len(held.bodies()) == 1
    finally:
        first.kill()  # SIGKILL: the kernel releases its lock
        first.wait(timeout=WAIT_S)
    assert not (out / "runs.jsonl").exists()  # neither refused run wrote a line
    held.answer_now.set()
    resumed = subprocess.run(_command(task, plan, out, held.base), env=_env(), capture_output=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr.decode()
    keys = [json.loads(line)["key"] for line in (out / "runs.jsonl").read_text().splitlines()]
    assert sorted(keys) == sorted(set(keys)) and len(keys) == 2


def test_the_lock_is_held_until_released_and_names_the_holder(tmp_path: Path) -> None:
    lock = folder_lock.hold(tmp_path)
    assert (tmp_path / "writer.lock").read_text() == f"{os.getpid()}\n"
    with pytest.raises(folder_lock.FolderBusy) as busy:  # another open of the file: flock refuses it as another writer's
        folder_lock.hold(tmp_path)
    assert busy.value.pid == os.getpid()
    assert busy.value.diagnostic().hint is not None
    lock.release()
    again = folder_lock.hold(tmp_path)
    again.release()


@pytest.mark.parametrize("plant", ["link", "dangling", "folder"])
def test_the_lock_file_is_never_a_link_or_a_folder(tmp_path: Path, plant: str) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    folder = tmp_path / "run"
    folder.mkdir()
    if plant == "link":
        (folder / "writer.lock").symlink_to(outside)
    elif plant == "dangling":
        (folder / "writer.lock").symlink_to(tmp_path / "created-through-the-link")
    else:
        (folder / "writer.lock").mkdir()
    with pytest.raises(ConfinedPathError):
        folder_lock.hold(folder)
    assert outside.read_text() == "keep"
    assert not (tmp_path / "created-through-the-link").exists()


class _NeverRun:
    """A backend that fails the test if the drive ever reaches it."""

    def prepare(self, specs: object, *, concurrency: int | None = None) -> None:
        raise AssertionError("a refused drive prepared its backend")

    def run(self, specs: object, **kwargs: object) -> Iterator[object]:
        raise AssertionError("a refused drive ran its backend")


def test_every_backend_is_behind_the_drive_s_lock(tmp_path: Path) -> None:
    # the local and the Ray backend are both driven by drive(), which takes the lock before it touches them
    from capplan.trials.driver import drive
    from capplan.trials.report.progress import Progress
    from capplan.trials.run_folder.folder import RunFolder
    from tests.trials.helpers import mock_plan, spec_for

    import io

    task = write_task(tmp_path / "pack")
    specs = [spec_for(task, mock_plan())]
    out = tmp_path / "run"
    out.mkdir()
    held = folder_lock.hold(out)
    try:
        with pytest.raises(RunFolderError, match="error\\[folder-busy\\]"):
            drive(specs, RunFolder(out), _NeverRun(), concurrency=1, max_cost=None,  # type: ignore[arg-type]
                  progress=Progress(io.StringIO(), live=False))
    finally:
        held.release()
    assert sorted(p.name for p in out.iterdir()) == ["writer.lock"]  # nothing else was written


def test_readers_take_no_lock(tmp_path: Path) -> None:
    from capplan.trials.driver import write_summary
    from capplan.trials.run_folder.folder import RunFolder
    from capplan.trials.runner import RunContext, run_trial
    from tests.trials.helpers import mock_plan, spec_for

    task = write_task(tmp_path / "pack")
    spec = spec_for(task, mock_plan())
    folder = RunFolder(tmp_path / "run")
    folder.open([spec])  # the writer: it holds the folder from here on
    folder.write(run_trial(spec, RunContext()))
    write_summary(folder)
    try:
        report = invoke("trial", "report", str(folder.root))
        assert report.exit_code == 0, report.output
        page = tmp_path / "report.html"
        view = invoke("trial", "view", str(folder.root), "--out", str(page))
        assert view.exit_code == 0, view.output
        assert page.is_file()
        with pytest.raises(folder_lock.FolderBusy):  # ... while the writer still holds it
            folder_lock.hold(folder.root)
    finally:
        folder.release()
