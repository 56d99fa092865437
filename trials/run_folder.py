"""The run folder, written only by the driver.

Layout::

    DIR/run.json                         the run's plans and tasks (fingerprints, sha256), interrupted trials
    DIR/runs.jsonl                       one RunLine per finished trial, appended as it finishes
                                         (append-only: a retried aborted trial adds a line that
                                         supersedes its earlier one; readers take the latest per key)
    DIR/trials/<plan>/<task>/<i>/trajectory.yaml
    DIR/trials/<plan>/<task>/<i>/metrics.yaml
    DIR/summary.md, DIR/summary.json     re-rendered from runs.jsonl

Crash safety: a trial's files are written atomically (temp file, rename), then its
``runs.jsonl`` line is appended with one ``write``: the line is the commit marker. That holds
against a killed process (the page cache outlives it); nothing is fsynced per trial, because
three fsyncs per trial made the writer, not the provider, the bottleneck of a concurrent run
(power-loss durability is left to the filesystem: a lost tail of lines only reruns trials).
On resume a torn last line (a kill mid-append) is cut off, trials with a line are skipped,
and everything else (interrupted, never started, or killed before its line) runs again and
overwrites whatever half-finished files it left.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from trials.spec import TrialKey, TrialRecords, TrialSpec

try:
    _Dumper: type[yaml.SafeDumper] = yaml.CSafeDumper
except AttributeError:  # PyYAML built without libyaml
    _Dumper = yaml.SafeDumper


class RunFolderMismatch(Exception):
    """The folder holds trials of a different plan or task under the same key."""


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so a reader sees the old file or the new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def dump_yaml(data: Any) -> bytes:
    text: str = yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120)
    return text.encode("utf-8")


class RunFolder:
    """One run folder; the driver is its only writer."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.runs = root / "runs.jsonl"
        self.manifest = root / "run.json"

    def open(self, specs: Iterable[TrialSpec]) -> dict[str, dict[str, Any]]:
        """Create or resume the folder for ``specs``; returns the finished lines by trial key.

        Refuses (``RunFolderMismatch``) when a finished trial's plan or task differs from the
        spec with the same key: resuming would mix two experiments in one table.
        """
        self.root.mkdir(parents=True, exist_ok=True)
        for orphan in (self.root / "trials").glob("**/.*.tmp"):  # a kill between write and rename
            orphan.unlink(missing_ok=True)
        finished = self.finished()
        by_key = {str(s.key): s for s in specs}
        for key, line in finished.items():
            spec = by_key.get(key)
            if spec is None:
                continue
            if line["plan_fingerprint"] != spec.plan_fingerprint or line["task_sha256"] != spec.task_sha256:
                raise RunFolderMismatch(
                    f"{self.root}: trial {key} was run with another plan or task file "
                    f"(plan {line['plan_fingerprint'][:12]}…, task {line['task_sha256'][:12]}…); "
                    "use a new --out folder to compare them"
                )
        manifest = self._read_manifest()
        for spec in by_key.values():
            manifest["plans"][spec.plan_key] = spec.plan_fingerprint
            manifest["tasks"][spec.task_id] = {"path": spec.task_path, "sha256": spec.task_sha256, "pack": spec.task_pack}
        self._write_manifest(manifest)
        return finished

    def finished(self) -> dict[str, dict[str, Any]]:
        """The latest line of ``runs.jsonl`` per key, so no trial is counted twice."""
        return {str(line["key"]): line for line in self.lines()}

    def spent_usd(self) -> float:
        """What every line cost, superseded attempts included: that money was spent."""
        return sum(float(line["cost_usd"]) for line in self.lines())

    def lines(self) -> list[dict[str, Any]]:
        """Every line of ``runs.jsonl`` in file order; a torn final line is cut off the file."""
        if not self.runs.exists():
            return []
        raw = self.runs.read_bytes()
        out: list[dict[str, Any]] = []
        good = 0
        for chunk in raw.splitlines(keepends=True):
            if not chunk.endswith(b"\n"):
                break
            try:
                line = json.loads(chunk)
            except json.JSONDecodeError:
                break
            out.append(line)
            good += len(chunk)
        if good != len(raw):
            with open(self.runs, "r+b") as fh:
                fh.truncate(good)
        return out

    def write(self, records: TrialRecords) -> None:
        """Write one finished trial: its files, then its runs.jsonl line (the commit marker)."""
        folder = self.root / records.key.relpath
        atomic_write(folder / "trajectory.yaml", dump_yaml(records.trajectory))
        atomic_write(folder / "metrics.yaml", dump_yaml(records.metrics))
        line = (json.dumps(records.run_line, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")
        fd = os.open(self.runs, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)

    def mark_interrupted(self, keys: Iterable[TrialKey]) -> None:
        """Record the trials that did not finish; a re-run of the same command runs them."""
        manifest = self._read_manifest()
        manifest["interrupted"] = sorted({str(k) for k in keys})
        self._write_manifest(manifest)

    def clear_interrupted(self) -> None:
        manifest = self._read_manifest()
        manifest["interrupted"] = []
        self._write_manifest(manifest)

    def _read_manifest(self) -> dict[str, Any]:
        if self.manifest.exists():
            data: dict[str, Any] = json.loads(self.manifest.read_text(encoding="utf-8"))
            return data
        return {"format": "capplan-trial-run", "version": 1, "plans": {}, "tasks": {}, "interrupted": []}

    def _write_manifest(self, manifest: dict[str, Any]) -> None:
        atomic_write(self.manifest, (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode("utf-8"))
