"""The output folder: its append-only logs, its seed, and which cells are finished.

``calls.jsonl``  one raw record per request (and one ``meta`` record per model's settings)
``cost.jsonl``   one cost record per request; the budget is their sum
``runs.jsonl``   one record when a run starts and one when it ends (seed, canary, trace size)
``cells.jsonl``  the state of each cell after each attempt; the latest line wins
``writer.lock``  held by the ``run`` writing the folder (one at a time)

Every write is confined to the folder (see :mod:`.confinement`).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from capplan.core import folder_lock
from capplan.core.confined_write import ConfinedPathError, append
from capplan.evals.reasoning_replay.errors import UsageError
from capplan.evals.reasoning_replay.fixture import Session, make_session
from capplan.evals.reasoning_replay.store import confinement
from capplan.evals.reasoning_replay.store.jsonl import JsonlFile

REPO_ROOT = Path(__file__).resolve().parents[3]  # store/ → reasoning_replay/ → evals/ → the checkout


class OutDir:
    """Paths and logs of one ``--out`` folder."""

    def __init__(self, path: Path, create: bool = True, prog: str = "harness.py") -> None:
        self.path = path
        self._writer: folder_lock.FolderLock | None = None
        if path.exists() and not path.is_dir():
            raise UsageError(f"--out {path} is a file, not a folder")
        if create:  # the writer: only into a folder of its own files, and alone (see store.confinement)
            confinement.check_out(path)
            try:
                path.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise UsageError(f"--out {path}: cannot create ({exc.strerror or exc})") from None
            self._writer = confinement.hold(path)
            confinement.check_out(path)  # as it is now, under the lock
        elif not path.is_dir():
            raise UsageError(f"--out {path} does not exist; run `{prog} run … --out {path}` first")
        self.calls = JsonlFile(path / "calls.jsonl")
        self.costs = JsonlFile(path / "cost.jsonl")
        self.runs = JsonlFile(path / "runs.jsonl")
        self.cells = JsonlFile(path / "cells.jsonl")

    def close(self) -> None:
        """Let the next writer in (the process's end does it too)."""
        if self._writer is not None:
            self._writer.release()

    def append_text(self, name: str, text: str) -> None:
        """Append ``text`` to the file ``name`` of the folder (links refused, never followed)."""
        try:
            append(self.path, (name,), text.encode("utf-8"))
        except ConfinedPathError as exc:
            raise confinement.problem(exc) from None

    def inside_repo(self) -> bool:
        """Results belong outside the repository; the caller warns when they are not."""
        try:
            self.path.resolve().relative_to(REPO_ROOT)
        except ValueError:
            return False
        return True

    def session(self, seed: int | None) -> tuple[Session, list[str]]:
        """The seed this folder was started with (so resumed cells replay the same trace)."""
        runs, problems = self.runs.read()
        earlier = [r["seed"] for r in runs if isinstance(r.get("seed"), int)]
        if earlier:
            if seed is not None and seed != earlier[0]:
                raise UsageError(f"{self.path} was started with --seed {earlier[0]}; its cells are "
                                 f"only comparable with that trace. Use a new --out for seed {seed}")
            return make_session(earlier[0]), problems
        return make_session(seed if seed is not None else random.randrange(1 << 30)), problems

    def cell_states(self) -> tuple[dict[str, dict[str, Any]], list[str]]:
        """Latest state record of every cell key."""
        records, problems = self.cells.read()
        latest: dict[str, dict[str, Any]] = {}
        for record in records:
            if isinstance(record.get("cell"), str):
                latest[record["cell"]] = record
        return latest, problems

    def saved_knobs(self) -> tuple[dict[tuple[str, str], dict[str, Any]], list[str]]:
        """The settings each (route, model) settled on in an earlier run."""
        records, problems = self.calls.read()
        knobs = {(str(r.get("route")), str(r.get("model"))): r["knobs"] for r in records
                 if r.get("step") == "meta" and isinstance(r.get("knobs"), dict)}
        return knobs, problems
