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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capplan.core.errors import UserError
from capplan.trials.report.run_data import LoadedRun, TrialResult, load_run
from capplan.trials.report.serve.live import running
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


def version(folder: Path) -> str:
    """What changes whenever the run writes: sizes and modification times of its top-level records."""
    parts = []
    for name in _VERSION_FILES:
        try:
            info = os.lstat(folder / name)
            parts.append(f"{info.st_size}.{info.st_mtime_ns}")
        except OSError:
            parts.append("-")
    return "/".join(parts)


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


def read_run(name: str, folder: Path, notify: Callable[[str], None] | None = None) -> RunView:
    """``folder`` read now: a damaged run is a row that says why, never a failed page."""
    stamp = version(folder)
    manifest = _manifest(folder)
    live, live_note = running(folder)
    loaded: LoadedRun | None = None
    problem: str | None = None
    notes: list[str] = [live_note] if live_note else []
    if _is_regular(folder / _RUNS) or manifest is None:
        try:
            loaded = load_run(folder, label=name, notify=notify or notes.append)
        except UserError as exc:
            problem = exc.render()
    trials = [_trial_row(t) for t in loaded.trials] if loaded is not None else []
    finished = {(t["key"], t["attempt"]) for t in trials}
    live_rows = [r.as_json() for r in live if (r.key, r.attempt) not in finished]
    models = sorted(set(manifest.plans) if manifest is not None else set()) or sorted({t["model"] for t in trials})
    graded = [t for t in loaded.trials if t.graded] if loaded is not None else []
    spend: float | None = None
    unknown = 0
    if loaded is not None:
        summary = loaded.summary()
        spend, unknown = summary.total_cost_usd, summary.unknown_cost_trials
    row = {
        "name": name, "started_at": manifest.started_at if manifest else None,
        "ended_at": manifest.ended_at if manifest else None, "run_id": manifest.run_id if manifest else None,
        "models": models, "trials": len(trials), "running": len(live_rows), "graded": len(graded),
        "passed": sum(1 for t in graded if t.passed),
        "pass_rate": (sum(1 for t in graded if t.passed) / len(graded)) if graded else None,
        "spend_usd": spend, "unknown_cost_trials": unknown,
        "status": _status(manifest, len(live_rows), problem), "problem": problem,
        "notes": [plain(n) for n in notes + (list(loaded.notes) if loaded is not None else [])],
    }
    return RunView(name=name, version=stamp, row=row, trials=trials, running=live_rows, loaded=loaded)


class Catalog:
    """The served folder's runs, each re-read only when its version changed. Thread-safe."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self._lock = threading.Lock()
        self._cache: dict[str, RunView] = {}

    def names(self) -> dict[str, Path]:
        return find_runs(self.root)

    def folder(self, name: str) -> Path | None:
        """The folder of the run called ``name``, or None when no run has that name."""
        return self.names().get(name)

    def run(self, name: str) -> RunView | None:
        folder = self.folder(name)
        return self._view(name, folder) if folder is not None else None

    def _view(self, name: str, folder: Path) -> RunView:
        stamp = version(folder)
        with self._lock:
            cached = self._cache.get(name)
        if cached is not None and cached.version == stamp:
            return cached
        view = read_run(name, folder)
        with self._lock:
            self._cache[name] = view
        return view

    def rows(self) -> list[dict[str, Any]]:
        """One row per run, with its version (the browser polls these)."""
        return [{**self._view(name, folder).row, "version": version(folder)} for name, folder in self.names().items()]
