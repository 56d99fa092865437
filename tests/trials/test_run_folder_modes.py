"""A run's folder is the same in the fast and the reference mode, timings and ids aside.

The same scripted trials go through the real driver, local backend, run folder and the plan's
own direct transport (gpt-5 compiled onto chat completions) to a loopback server, once with
every speed-only path on and once in the reference mode (``CAPPLAN_REFERENCE=1``: records walked
for credentials, answers read through httpx and the email parser, no memos). One trial's user
quotes the credential, so its records are redacted on either side; the others hold nothing to
redact. Every file the runs write is compared: the same names, and the same bytes once the
fields that time a run or name one of its sends are blanked.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from capplan.core import reference_mode as switch
from capplan.executor.direct import pool
from capplan.trials.backends.local import LocalBackend
from capplan.trials.driver import drive
from capplan.trials.report.progress import Progress
from capplan.trials.run_folder.folder import RunFolder
from capplan.trials.runner import RunContext
from tests.chat_route import chat_route_plan
from tests.fake_provider import FakeProvider
from tests.trials.helpers import spec_for, write_task

KEY = "sk-run-folder-modes-3b9d1c"
#: fields whose values time a run or identify one of its sends, so differ between any two runs: every
#: duration (``*_s``: wall, latency, wait and their percentiles), time stamp, request, run and execution id
VARYING = re.compile(r'((?<![\w-])"?(?:\w+_s|\w+_at|at|ts|request_id|run_id|execution|pid)"?\s*:\s*)("[^"\n]*"|[^,\n}\]]+)')

#: the summary table's latency cell (p50 / p95 seconds)
LATENCY_CELL = re.compile(r"\d+\.\d+ / \d+\.\d+")


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProvider]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_API_KEY", KEY)
        mp.delenv("LLM_PROXY_BASE_URL", raising=False)
        with FakeProvider() as srv:
            yield srv


def _run(out: Path, server: FakeProvider, tasks: Path, reference: bool) -> None:
    saved = switch._decided
    switch._decided = reference
    pool.close_all()  # each origin's sender is chosen per mode
    try:
        plan = chat_route_plan("gpt-5")
        specs = [spec_for(tasks / "count.yaml", plan, index=i, api_base=server.root) for i in range(3)]
        specs.append(spec_for(tasks / "leak.yaml", plan, index=0, api_base=server.root))
        drive(specs, RunFolder(out), LocalBackend(RunContext()), concurrency=1, max_cost=None,
              progress=Progress(io.StringIO()))
    finally:
        pool.close_all()
        switch._decided = saved


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _steady(name: str, data: bytes) -> str:
    """The file's text with its varying fields blanked; a journal's lines sorted (the writer thread
    appends a trial's end while the next trial sends, in whichever order the threads run)."""
    text = VARYING.sub(lambda m: m.group(1) + "<varies>", data.decode("utf-8"))
    text = LATENCY_CELL.sub("<varies>", text)
    return "\n".join(sorted(text.splitlines())) if name.endswith(".jsonl") else text


def test_both_modes_write_the_same_run_folder(server: FakeProvider, tmp_path: Path) -> None:
    tasks = tmp_path / "pack"
    write_task(tasks, turns=["please add 2", "and 3 more", "thanks"])
    write_task(tasks, task_id="leak", turns=[f"my key is {KEY}, add 1", "thanks"])
    _run(tmp_path / "fast", server, tasks, reference=False)
    _run(tmp_path / "reference", server, tasks, reference=True)
    fast, reference = _files(tmp_path / "fast"), _files(tmp_path / "reference")
    assert fast.keys() == reference.keys()
    assert any(name.endswith("trajectory.yaml") for name in fast), sorted(fast)
    for name in fast:
        assert KEY.encode() not in fast[name], name
        assert _steady(name, fast[name]) == _steady(name, reference[name]), name
    leaked = [name for name in fast if "/leak/" in name]
    assert leaked and any(b"<redacted>" in fast[name] for name in leaked), leaked
    lines = [json.loads(line) for line in (tmp_path / "fast" / "runs.jsonl").read_text().splitlines()]
    assert sorted(line["termination_reason"] for line in lines) == ["user_stop"] * 4
