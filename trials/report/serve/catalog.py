"""The run folders under the served folder, found without following a link, and what the pages show of each.

A run is a folder holding a regular ``run.json``. Runs are found by walking the served folder
(at most :data:`MAX_DEPTH` levels, :data:`MAX_FOLDERS` folders, :data:`MAX_RUNS` runs) without
entering a link or a run's own ``trials/``; each is named by its path relative to the served
folder, and a request names a run only by that name, looked up in this catalog: no text a
request sends ever becomes a path. A folder that resolves outside the served one (a link
higher up, a bind mount) is left out.

A run is read as ``trial report`` reads it (:func:`capplan.trials.report.run_data.load_run`) and
kept until its files change (the sizes and times of ``run.json``, ``runs.jsonl`` and
``calls.jsonl``: its *version*, which the page polls). A run whose trials have not finished yet
has no ``runs.jsonl``: it is shown with what its journal says is running.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capplan.core.errors import UserError
from capplan.trials.report.run_data import LoadedRun, TrialResult, load_run
from capplan.trials.report.serve.live import LiveJournal, Running
from capplan.trials.run_folder import confined
from capplan.trials.run_folder.call_journal import JOURNAL_FILE
from capplan.trials.run_folder.confined import ConfinedPathError
from capplan.trials.run_folder.records import RunManifest
from capplan.trials.safe_text import plain

MAX_DEPTH = 6
MAX_FOLDERS = 20_000
MAX_RUNS = 1_000
_MANIFEST = "run.json"
_RUNS = "runs.jsonl"
_VERSION_FILES = (_MANIFEST, _RUNS, JOURNAL_FILE)
#: how long one walk of the folder answers "which runs are there" (a new run shows within this)
NAMES_TTL_S = 2.0


def _is_regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def find_runs(root: Path) -> dict[str, Path]:
    """Run name (path relative to ``root``, ``.`` for ``root`` itself) -> its folder, in walk order."""
    base = root.resolve()
    found: dict[str, Path] = {}
    seen = 0
    stack: list[tuple[Path, int]] = [(base, 0)]
    while stack and seen < MAX_FOLDERS and len(found) < MAX_RUNS:
        folder, depth = stack.pop()
        seen += 1
        if _is_regular(folder / _MANIFEST):
            rel = folder.relative_to(base).as_posix()
            found[rel or "."] = folder
            continue  # a run's own folders are its trials
        if depth >= MAX_DEPTH:
            continue
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name, reverse=True)
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
                continue  # a link is never entered; hidden folders hold no runs capplan writes
            path = Path(entry.path)
            if path.resolve().is_relative_to(base):
                stack.append((path, depth + 1))
    return dict(sorted(found.items()))


def _stamp(folder: Path, names: tuple[str, ...]) -> str:
    parts = []
    for name in names:
        try:
            info = os.lstat(folder / name)
            parts.append(f"{info.st_size}.{info.st_mtime_ns}")
        except OSError:
            parts.append("-")
    return "/".join(parts)


def version(folder: Path) -> str:
    """What changes whenever the run writes: sizes and modification times of its top-level records."""
    return _stamp(folder, _VERSION_FILES)


@dataclass(frozen=True)
class _Records:
    """A run's records read back (``run.json``, ``runs.jsonl``): re-read only when those two change."""

    stamp: str
    manifest: RunManifest | None
    loaded: LoadedRun | None
    problem: str | None
    notes: tuple[str, ...]
    trials: tuple[dict[str, Any], ...]


@dataclass
class RunView:
    """One run as the pages show it: its row in the run browser and its trial table."""

    name: str
    version: str
    row: dict[str, Any]
    trials: list[dict[str, Any]]
    running: list[dict[str, Any]]
    loaded: LoadedRun | None = field(default=None, repr=False)


def _manifest(folder: Path) -> RunManifest | None:
    try:
        raw = confined.read_bytes(folder, (_MANIFEST,), limit=16 << 20)
        return RunManifest.model_validate_json(raw) if raw is not None else None
    except (ConfinedPathError, ValueError):
        return None


def _status(manifest: RunManifest | None, live: int, problem: str | None) -> str:
    if problem is not None:
        return "unreadable"
    if manifest is None:
        return "unknown"
    if manifest.ended_at is None and manifest.started_at is not None:
        return "running" if live else "not ended (running, or its process was killed)"
    if manifest.interrupted:
        return f"interrupted ({len(manifest.interrupted)} trial(s) to resume)"
    return "finished"


def _trial_row(t: TrialResult) -> dict[str, Any]:
    """What the trial table sorts by; None stays None (unknown, shown as such, sorted last)."""
    return {"key": t.key, "model": t.plan_key, "task": t.task_id, "pack": t.task_pack, "index": t.index,
            "attempt": t.attempt, "outcome": t.outcome, "termination": t.termination_reason,
            "cost_usd": t.cost_usd, "user_cost_usd": t.user_cost_usd, "tokens": t.total_tokens,
            "latency_s": t.latency_s, "turns": t.turns}


def _read_records(name: str, folder: Path) -> _Records:
    """``folder``'s records read now: a damaged run is a problem that says why, never a failed page."""
    stamp = _stamp(folder, (_MANIFEST, _RUNS))
    manifest = _manifest(folder)
    loaded: LoadedRun | None = None
    problem: str | None = None
    notes: list[str] = []
    if _is_regular(folder / _RUNS) or manifest is None:
        try:
            loaded = load_run(folder, label=name, notify=notes.append)
        except UserError as exc:
            problem = exc.render()
    trials = tuple(_trial_row(t) for t in loaded.trials) if loaded is not None else ()
    return _Records(stamp=stamp, manifest=manifest, loaded=loaded, problem=problem,
                    notes=tuple(notes) + (loaded.notes if loaded is not None else ()), trials=trials)


def _assemble(name: str, stamp: str, records: _Records, live: list[Running], live_note: str | None) -> RunView:
    manifest, loaded = records.manifest, records.loaded
    finished = {(t["key"], t["attempt"]) for t in records.trials}
    live_rows = [r.as_json() for r in live if (r.key, r.attempt) not in finished]
    models = sorted(manifest.plans) if manifest is not None and manifest.plans else \
        sorted({t["model"] for t in records.trials})
    graded = [t for t in loaded.trials if t.graded] if loaded is not None else []
    passed = sum(1 for t in graded if t.passed)
    summary = loaded.summary() if loaded is not None else None
    row = {
        "name": name, "started_at": manifest.started_at if manifest else None,
        "ended_at": manifest.ended_at if manifest else None, "run_id": manifest.run_id if manifest else None,
        "models": models, "trials": len(records.trials), "running": len(live_rows), "graded": len(graded),
        "passed": passed, "pass_rate": passed / len(graded) if graded else None,
        "spend_usd": summary.total_cost_usd if summary else None,
        "unknown_cost_trials": summary.unknown_cost_trials if summary else 0,
        "status": _status(manifest, len(live_rows), records.problem), "problem": records.problem,
        "notes": [plain(n) for n in ([live_note] if live_note else []) + list(records.notes)],
    }
    return RunView(name=name, version=stamp, row=row, trials=list(records.trials), running=live_rows, loaded=loaded)


class Catalog:
    """The served folder's runs. A run's records are re-read only when they change; its journal, incrementally.

    Thread-safe: the server answers requests on several threads.
    """

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self._lock = threading.Lock()
        self._records: dict[str, _Records] = {}
        self._journals: dict[str, LiveJournal] = {}
        self._views: dict[str, RunView] = {}
        self._names: tuple[float, dict[str, Path]] | None = None

    def names(self) -> dict[str, Path]:
        """The runs under the folder, walked again at most every :data:`NAMES_TTL_S` (an open page polls every second)."""
        now = time.monotonic()
        with self._lock:
            if self._names is not None and now - self._names[0] < NAMES_TTL_S:
                return self._names[1]
        found = find_runs(self.root)
        with self._lock:
            self._names = (now, found)
        return found

    def folder(self, name: str) -> Path | None:
        """The folder of the run called ``name``, or None when no run has that name (any more)."""
        folder = self.names().get(name)
        # checked again at every use: a folder swapped for a link since the walk is not followed out
        if folder is None or os.path.islink(folder) or not folder.resolve().is_relative_to(self.root):
            return None
        return folder

    def run(self, name: str) -> RunView | None:
        folder = self.folder(name)
        return self._view(name, folder) if folder is not None else None

    def _view(self, name: str, folder: Path) -> RunView:
        stamp = version(folder)
        with self._lock:
            cached = self._views.get(name)
            records = self._records.get(name)
            journal = self._journals.setdefault(name, LiveJournal(folder))
        if cached is not None and cached.version == stamp:
            return cached
        if records is None or records.stamp != _stamp(folder, (_MANIFEST, _RUNS)):
            records = _read_records(name, folder)
        live, note = journal.running()
        view = _assemble(name, stamp, records, live, note)
        with self._lock:
            self._records[name] = records
            self._views[name] = view
        return view

    def rows(self) -> list[dict[str, Any]]:
        """One row per run, with its version (the browser polls these)."""
        rows = []
        for name in self.names():
            folder = self.folder(name)
            if folder is None:
                continue
            view = self._view(name, folder)
            rows.append({**view.row, "version": view.version})
        return rows
