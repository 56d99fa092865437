"""A served folder for the ``trial view --serve`` tests, built from the session's two hostile runs (copied, never edited).

Under the served folder: run A as ``a``, run B under a nested, hostile name, a copy of A that
the live tests write into (``live``, its ``run.json`` without an end time, as while a run goes),
a link to run A's folder outside the served one (never listed), and a copy of A whose one trial
folder is a link out of the served folder (listed as unreadable, its trial never served).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from tests.trials.results.hostile_runs import HostileRuns

#: run B's name in the served folder: markup, a pipe and an escape, one folder down
B_NAME = "nested/b <b>|\x1b[2J run"


@dataclass(frozen=True)
class Served:
    root: Path
    outside: Path

    @property
    def live(self) -> Path:
        return self.root / "live"


def build_served(hostile: HostileRuns, tmp: Path) -> Served:
    root = tmp / "served"
    shutil.copytree(hostile.a.out, root / "a", symlinks=True)
    shutil.copytree(hostile.b.out, root / B_NAME, symlinks=True)
    shutil.copytree(hostile.a.out, root / "live", symlinks=True)
    manifest = json.loads((root / "live" / "run.json").read_text())
    (root / "live" / "run.json").write_text(json.dumps({**manifest, "ended_at": None}))
    (root / "linked").symlink_to(hostile.a.out, target_is_directory=True)
    bad = root / "linked-trial"
    shutil.copytree(hostile.a.out, bad, symlinks=True)
    shutil.rmtree(bad / "trials" / "agent-a" / "t01" / "0")
    (bad / "trials" / "agent-a" / "t01" / "0").symlink_to(hostile.b.out / "trials" / "agent-b" / "t01" / "0",
                                                         target_is_directory=True)
    return Served(root=root, outside=hostile.root)


def _append(path: Path, data: dict[str, object]) -> None:
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(data) + "\n")


def start_trial(run: Path, key: str, execution: str, turn: int) -> None:
    """The journal lines of a trial that sends its turn ``turn`` now, as the call journal writes them."""
    plan_key, task_id, index = key.split("/")
    _append(run / "calls.jsonl", {"kind": "send", "run_id": None, "execution": execution, "key": key,
                                  "plan_key": plan_key, "task_id": task_id, "index": int(index), "attempt": 1,
                                  "send": {"request_id": f"{execution}-{turn}", "role": "agent", "turn": turn,
                                           "attempt": 1, "max_usd": None}})


def finish_trial(run: Path, like: str, key: str, execution: str) -> None:
    """Trial ``key`` finished as ``like`` did: its folder, its ``runs.jsonl`` line, the journal's end line."""
    lines = [json.loads(text) for text in (run / "runs.jsonl").read_text().splitlines()]
    source = next(line for line in lines if line["key"] == like)
    plan_key, task_id, index = key.split("/")
    line = {**source, "key": key, "index": int(index), "dir": f"trials/{key}"}
    shutil.copytree(run / source["dir"], run / line["dir"])
    _append(run / "calls.jsonl", {"kind": "end", "as": "written", "execution": execution, "key": key, "attempt": 1})
    _append(run / "runs.jsonl", line)
