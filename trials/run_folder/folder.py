"""The run folder, written only by the driver.

Layout::

    DIR/run.json                         what defines the experiment (plans, task files, user plan, caps, module
                                         files, versions), run id and times, interrupted trials and their spend
    DIR/runs.jsonl                       one RunLine per finished trial, appended as it finishes
                                         (append-only: a retried aborted trial adds a line with the
                                         next ``attempt``; readers take the highest attempt per key)
    DIR/runs.jsonl.torn-<n>              a torn last line set aside on resume (see below)
    DIR/calls.jsonl                      every provider attempt as it returned, so calls of trials that
                                         died in flight are still counted (see capplan.trials.run_folder.call_journal)
    DIR/trials/<plan>/<task>/<i>/trajectory.yaml
    DIR/trials/<plan>/<task>/<i>/metrics.yaml
    DIR/summary.md, DIR/summary.json     re-rendered from runs.jsonl
    DIR/writer.lock                      the writer's lock (see capplan.core.folder_lock): one writer per folder
    DIR/report.html                      written by ``capplan trial view`` only; a run never reads it

Crash safety: a trial's files are written atomically (temp file, rename), then its
``runs.jsonl`` line is appended with one ``write``: the line is the commit marker. That holds
against a killed process (the page cache outlives it); nothing is fsynced per trial, because
three fsyncs per trial made the writer, not the provider, the bottleneck of a concurrent run
(power-loss durability is left to the filesystem: a lost tail of lines only reruns trials).

Integrity: ``runs.jsonl`` is the run's record of what was paid for, so nothing rewrites it.
On resume a torn last line (a kill mid-append: no newline) is copied to
``runs.jsonl.torn-<n>`` and cut off, and its trial runs again; that is the only change ever
made to existing bytes. Any other line that does not read back as a :class:`RunLine` (not
JSON, blank, not an object, a key missing, a wrong type) is a located error
(``DIR/runs.jsonl:LINE:1: error[…]``) and neither ``report`` nor a resume changes anything.
A line repeated as it is (same trial, same attempt) is one record: counted once in the
summary, the spend and ``--max-cost``. ``run.json`` is validated the same way, and a folder
holding anything but a capplan run (no valid ``run.json``) is refused, never written beside.

Identity: ``run.json`` records everything that defines the experiment (see
:mod:`capplan.trials.run_folder.run_identity`); a resume that changes any of it is refused before anything
is written, with the list of what changed. A ``run.json`` of an older capplan (no ``settings``)
is resumed only while no trial of it has finished: with finished trials, whether they share
this run's user plan, turn cap and code is unknown, so it is refused the same way.

Confinement: every file is written through :mod:`capplan.trials.run_folder.confined`: names checked, the path
resolved inside the folder, no link below the folder followed (``O_NOFOLLOW`` on every
component, temp files created and renamed inside the same real folder).
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from capplan.core import folder_lock
from capplan.core.diagnostics import Diagnostic, InputError
from capplan.core.input_limits import InputLimitError
from capplan.core.safe_names import UnsafeName
from capplan.core.strict_json import StrictJSONError, loads_strict
from capplan.trials.run_folder import confined
from capplan.trials.run_folder.call_journal import JOURNAL_FILE, CallJournal, DiedSpend, JournalCache
from capplan.trials.run_folder.call_journal import died_in_flight as journal_died
from capplan.trials.run_folder.confined import ConfinedPathError, check_segment, trial_parts
from capplan.trials.run_folder.costs import known_spend
from capplan.trials.run_folder.record_yaml import dump_records_yaml
from capplan.trials.run_folder.records import RunLine, RunManifest, RunSettings, record_json
from capplan.trials.run_folder.render_process import RecordRenderer
from capplan.trials.spec import TrialKey, TrialRecords, TrialSpec

RUNS_FILE = "runs.jsonl"
MANIFEST_FILE = "run.json"
TORN_PREFIX = f"{RUNS_FILE}.torn-"
TRIAL_FILES = ("trajectory.yaml", "metrics.yaml")
#: files capplan writes at the top of a run folder (probe.json: see capplan.trials.run_folder.probe_census)
TOP_FILES = (MANIFEST_FILE, RUNS_FILE, "summary.md", "summary.json", "probe.json", JOURNAL_FILE)
#: a run.json lists plans and tasks; far below this even for thousands of task files
MAX_MANIFEST_BYTES = 16 << 20
#: a runs.jsonl line capplan writes is well under 1 KiB
MAX_LINE_BYTES = 64 << 10

_NEW_FOLDER_HINT = "choose a new --out (a missing or empty folder), or the folder of an earlier run of this command"
_TMP = r"\.(?:{names})\.[A-Za-z0-9_]{{6,32}}\.tmp"
_TOP_LEFTOVERS = re.compile(_TMP.format(names="|".join(re.escape(n) for n in TOP_FILES if n != RUNS_FILE)))
_TRIAL_LEFTOVERS = re.compile(_TMP.format(names="|".join(re.escape(n) for n in TRIAL_FILES)))


class _KeptDescriptor:
    """One descriptor kept open across writes (``runs.jsonl``'s), closed once however it is closed."""

    def __init__(self) -> None:
        self.fd: int | None = None

    def close(self) -> None:
        fd, self.fd = self.fd, None
        if fd is not None:
            os.close(fd)


class RunFolderError(InputError):
    """The run folder cannot be used as it is; located diagnostics, and nothing was changed."""

    code = "RUN_FOLDER"


class RunIdentityChanged(RunFolderError):
    """The folder's run.json records another experiment than this run (plans, tasks, settings, code, versions)."""

    code = "RUN_IDENTITY_CHANGED"


class RunFolderMismatch(RunFolderError):
    """The folder holds trials of a different plan or task under the same key."""

    code = "RUN_FOLDER_MISMATCH"


def dump_yaml(data: Any) -> bytes:
    return dump_records_yaml(data)


@dataclass
class _Entry:
    """One distinct record of ``runs.jsonl``: where it first appears, and its data."""

    lineno: int
    line: RunLine

    @property
    def data(self) -> dict[str, Any]:
        return record_json(self.line)

    @property
    def canonical(self) -> str:
        return json.dumps(self.data, sort_keys=True, ensure_ascii=False)


@dataclass
class _Lines:
    """``runs.jsonl`` read back: distinct records in file order, and a torn tail if any."""

    entries: list[_Entry] = field(default_factory=list)
    good_bytes: int = 0
    torn: bytes | None = None
    torn_lineno: int = 0
    complete: int = 0  # complete lines in the file, repeats included
    by_identity: dict[tuple[str, int | str], _Entry] = field(default_factory=dict)
    _attempts: dict[str, int] = field(default_factory=dict)

    def add(self, entry: _Entry) -> _Entry | None:
        """Keep ``entry``; the earlier record it repeats when it is a repeat (then it is not kept)."""
        identity = _identity(entry)
        seen = self.by_identity.get(identity)
        if seen is not None:
            return seen
        self.by_identity[identity] = entry
        self.entries.append(entry)
        key = entry.line.key
        self._attempts[key] = max(self._attempts.get(key, 0) + 1, entry.line.attempt or 0)
        return None

    def latest(self) -> dict[str, _Entry]:
        """Per trial key, the record of its highest attempt (file order among unnumbered ones)."""
        best: dict[str, _Entry] = {}
        for entry in self.entries:
            held = best.get(entry.line.key)
            if held is None or _rank(entry) >= _rank(held):
                best[entry.line.key] = entry
        return best

    def attempts(self, key: str) -> int:
        """How many attempts of trial ``key`` the file records (its highest attempt number, at least)."""
        return self._attempts.get(key, 0)


def _identity(entry: _Entry) -> tuple[str, int | str]:
    """Two lines are one record when they are the same trial's same attempt.

    Lines written before attempts were numbered have no attempt: they are one record only when
    they are identical.
    """
    attempt = entry.line.attempt
    return (entry.line.key, attempt if attempt is not None else entry.canonical)


def _rank(entry: _Entry) -> tuple[int, int]:
    return (entry.line.attempt or 0, entry.lineno)


class RunFolder:
    """One run folder; the driver is its only writer.

    ``notify`` receives what the folder reports without failing (a torn line set aside, a
    repeated line counted once), one rendered diagnostic at a time; they are also kept in
    ``notes``.
    """

    def __init__(self, root: Path, notify: Callable[[str], None] | None = None) -> None:
        self.root = root
        self.runs = root / RUNS_FILE
        self.manifest = root / MANIFEST_FILE
        self.notes: list[str] = []
        self._notify = notify
        self._lock = threading.Lock()
        self._lines: _Lines | None = None
        self._checked: tuple[tuple[str, str, str], ...] | None = None
        self._noted: set[tuple[str, int, str]] = set()  # a note is given once, however often it is found
        self.run_id: str | None = None  # set by open(): stamped on every line this run writes
        #: set by open(): where this process's trials journal their calls
        self.journal: CallJournal | None = None
        self._user_plans: dict[str, str | None] = {}
        self._journal_read = JournalCache()  # read back several times as a run ends; parsed once
        self._writer: folder_lock.FolderLock | None = None  # held from open() to release()
        # the folders holding trial folders, walked once per invocation; runs.jsonl opened once, as the journal is
        self._folders = confined.OpenFolders(root)
        self._runs = _KeptDescriptor()
        # a folder written through without drive() (the Python API) and dropped closes it too
        weakref.finalize(self, self._runs.close)

    # -- reading and checking ------------------------------------------------------------

    def check(self, specs: Sequence[TrialSpec] = (), *, report: bool = False,
              settings: RunSettings | None = None) -> None:
        """Refuse (:class:`RunFolderError`, every problem at once) a folder this run must not use.

        Nothing is written. Checks that the folder is missing, empty or a capplan run (a valid
        ``run.json``), that every line of ``runs.jsonl`` reads back, that no file capplan would
        write is a link, a folder or a special file, that every name in ``specs`` is safe, and
        that no finished trial was run with another plan or task than its spec. With
        ``settings`` (this run's identity beside ``specs``), a folder recorded with another
        identity is refused (:class:`RunIdentityChanged`). ``report``: the folder must already be
        a run with a ``runs.jsonl``.
        """
        diags = self._check_names(specs)
        if not diags:
            diags = self._check_folder(specs, report=report)
        if diags:
            raise RunFolderError(diags)
        if specs:
            mismatch = self._mismatch(specs)
            if mismatch:
                raise RunFolderMismatch(mismatch)
        if specs and settings is not None:
            changed = self._identity_changes(specs, settings)
            if changed:
                raise RunIdentityChanged(changed)
        self._checked = _identities(specs)

    def _identity_changes(self, specs: Sequence[TrialSpec], settings: RunSettings) -> list[Diagnostic]:
        from capplan.trials.run_folder.run_identity import changes

        if not os.path.lexists(self.manifest):
            return []
        recorded = self._read_manifest()
        where = str(self.manifest)
        hint = ("this folder holds trials of the recorded setup; use a new --out to run this one (or run the "
                "recorded command again to resume)")
        if recorded.settings is None:
            if not self._contents().entries:
                return []
            return [Diagnostic(where, 1, 1, "run-identity-unknown",
                               "was written by an older capplan that did not record the run's user plan, turn cap, "
                               "trial count or environment code, so whether this run matches its finished trials "
                               "is unknown", hint="use a new --out")]
        plans = {s.plan_key: s.plan_fingerprint for s in specs}
        tasks = {s.task_id: (s.task_sha256, s.task_pack) for s in specs}
        found = changes(recorded, plans, tasks, settings)
        return [Diagnostic(where, 1, 1, "run-identity-changed", f"this run differs from the recorded one: {what}",
                           hint=hint) for what in found]

    def _check_names(self, specs: Sequence[TrialSpec]) -> list[Diagnostic]:
        """Names that become folders, checked again where they are joined (a reader may have missed one)."""
        found: set[Diagnostic] = set()
        for spec in specs:
            for what, value, where in (("model key", spec.plan_key, "--plan"), ("task id", spec.task_id, spec.task_path),
                                       ("task pack", spec.task_pack, spec.task_path)):
                try:
                    check_segment(value, what)
                except UnsafeName as exc:
                    found.add(Diagnostic(where, 1, 1, "unsafe-name", f"{exc}, so it cannot name a folder of the run",
                                         hint="names that become folders must be short slugs"))
            if isinstance(spec.index, bool) or not isinstance(spec.index, int) or spec.index < 0:
                found.add(Diagnostic("--trials", 1, 1, "unsafe-name", "trial index must be a whole number of 0 or more"))
        return sorted(found)

    def _check_folder(self, specs: Sequence[TrialSpec], *, report: bool) -> list[Diagnostic]:
        root = self.root
        if not os.path.lexists(root):
            if report:
                return [Diagnostic(str(root), 1, 1, "not-a-run-folder", "does not exist")]
            self._lines = _Lines()
            return []
        if not root.is_dir():
            return [Diagnostic("--out" if not report else str(root), 1, 1, "out-not-a-folder",
                               f"{root} is not a folder", hint=_NEW_FOLDER_HINT)]
        try:
            entries = sorted(os.listdir(root))
        except OSError as exc:
            return [Diagnostic(str(root), 1, 1, "out-unwritable", f"cannot list the folder: {exc.strerror or exc}")]
        entries = [e for e in entries if e != folder_lock.LOCK_FILE]  # left by a writer stopped before run.json
        if not entries and not report:
            self._lines = _Lines()
            return []
        diags: list[Diagnostic] = []
        if self._read_manifest_checked(diags, entries, report=report) is None:
            return diags
        for name in TOP_FILES[2:]:
            problem = _not_a_file(root / name)
            if problem is not None:
                diags.append(problem)
        if not diags:
            diags += self._check_probe()
        lines = self._read_lines(diags)
        if not diags:
            self._journal_torn(diags, report=report)
        if report and lines is not None and not os.path.lexists(self.runs):
            diags.append(Diagnostic(str(self.runs), 1, 1, "not-a-run-folder",
                                    "does not exist: no trial of this run has finished yet"))
        keys: list[tuple[str, str, int]] = [(s.plan_key, s.task_id, s.index) for s in specs]
        if lines is not None:
            keys += [(e.line.plan_key, e.line.task_id, e.line.index) for e in lines.entries]
        diags += _check_trial_folders(root, keys)
        if diags:
            return diags
        if lines is not None:
            self._lines = lines
            if report:
                self._note_torn(lines)
        return []

    def _read_manifest_checked(self, diags: list[Diagnostic], entries: list[str], *,
                               report: bool) -> RunManifest | None:
        problem = _not_a_file(self.manifest)
        if problem is not None:
            diags.append(problem)
            return None
        if not os.path.lexists(self.manifest):
            shown = ", ".join(_shown_name(e) + ("/" if (self.root / e).is_dir() else "") for e in entries[:5])
            shown += f" and {len(entries) - 5} more" if len(entries) > 5 else ""
            if report:
                diags.append(Diagnostic(str(self.manifest), 1, 1, "not-a-run-folder",
                                        "does not exist, so this is not a capplan trial run folder"))
            else:
                diags.append(Diagnostic("--out", 1, 1, "out-not-run",
                                        f"{self.root} holds files that are not a capplan trial run ({shown}) and no "
                                        "run.json; a run never writes beside or over foreign files",
                                        hint=_NEW_FOLDER_HINT))
            return None
        try:
            return self._read_manifest()
        except RunFolderError as exc:
            diags += exc.diagnostics
            return None

    def _read_manifest(self) -> RunManifest:
        """``run.json`` validated; a fresh manifest when there is none yet."""
        try:
            raw = confined.read_bytes(self.root, (MANIFEST_FILE,), limit=MAX_MANIFEST_BYTES)
        except ConfinedPathError as exc:
            raise RunFolderError([exc.diagnostic()]) from None
        if raw is None:
            return RunManifest()
        where = str(self.manifest)
        hint = "this is not a capplan trial run folder, or its run.json is damaged; " + _NEW_FOLDER_HINT
        try:
            data = loads_strict(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise RunFolderError([Diagnostic(where, 1, 1, "run-manifest-invalid", "is not UTF-8 text", hint=hint)]) \
                from None
        except (StrictJSONError, InputLimitError) as exc:
            raise RunFolderError([Diagnostic(where, exc.line, exc.col, "run-manifest-invalid", str(exc), hint=hint)]) \
                from None
        except ValueError as exc:  # e.g. an integer past the digit limit
            raise RunFolderError([Diagnostic(where, 1, 1, "run-manifest-invalid", f"not valid JSON: {_short(exc)}",
                                             hint=hint)]) from None
        if not isinstance(data, dict):
            raise RunFolderError([Diagnostic(where, 1, 1, "run-manifest-invalid",
                                             f"must be a JSON object, not {_json_kind(data)}", hint=hint)])
        try:
            return RunManifest.model_validate_json(raw, strict=True)
        except ValidationError as exc:
            raise RunFolderError([Diagnostic(where, 1, 1, "run-manifest-invalid", _describe(err), hint=hint)
                                  for err in exc.errors(include_input=False)]) from None

    def _check_probe(self) -> list[Diagnostic]:
        """``probe.json`` (a probe-mode run adds to it on resume) read back against its model."""
        from capplan.trials.run_folder.probe_census import CENSUS_FILE, ProbeCensus  # it writes through this module

        try:
            raw = confined.read_bytes(self.root, (CENSUS_FILE,), limit=MAX_MANIFEST_BYTES)
        except ConfinedPathError as exc:
            return [exc.diagnostic()]
        if raw is None:
            return []
        try:
            ProbeCensus.model_validate_json(raw, strict=True)
        except ValidationError as exc:
            return [Diagnostic(str(self.root / CENSUS_FILE), 1, 1, "probe-census-invalid", _describe(err),
                               hint="probe.json is written by capplan only; move it away to start a new census")
                    for err in exc.errors(include_input=False)[:20]]
        return []

    def _read_lines(self, diags: list[Diagnostic]) -> _Lines | None:
        """``runs.jsonl`` read back and validated; problems go to ``diags`` (then None)."""
        try:
            raw = confined.read_bytes(self.root, (RUNS_FILE,))
        except ConfinedPathError as exc:
            diags.append(exc.diagnostic())
            return None
        lines = _Lines()
        if raw is None:
            return lines
        where = str(self.runs)
        found: list[Diagnostic] = []
        offset = 0
        lineno = 0
        while offset < len(raw):
            lineno += 1
            end = raw.find(b"\n", offset)
            if end < 0:  # no newline: a kill in the middle of an append
                lines.torn, lines.torn_lineno = raw[offset:], lineno
                break
            chunk = raw[offset:end + 1]
            offset = end + 1
            lines.complete = lineno
            entry = _parse_line(chunk, lineno, where, found)
            if entry is None:
                continue
            seen = lines.add(entry)
            if seen is None:
                continue
            if seen.line != entry.line:
                found.append(Diagnostic(where, lineno, 1, "run-line-conflict",
                                        f"trial {entry.line.key} attempt {entry.line.attempt} is also line "
                                        f"{seen.lineno}, with other values; which one was paid for is unknown",
                                        hint="keep the line that matches the trial's metrics.yaml and remove the other"))
            else:
                self._note(Diagnostic(where, lineno, 1, "run-line-repeated",
                                      f"repeats line {seen.lineno} (trial {entry.line.key}); counted once",
                                      severity="warning"))
        if found:
            diags += found
            return None
        lines.good_bytes = offset  # the end of the last complete line
        return lines

    def _journal_torn(self, diags: list[Diagnostic], *, report: bool) -> int:
        """``calls.jsonl`` read back (bad lines go to ``diags``); the offset its complete lines end at."""
        found: list[Diagnostic] = []
        try:
            journal = self._journal_read.read(self.root, found)
        except ConfinedPathError as exc:
            diags.append(exc.diagnostic())
            return 0
        diags += found[:20]
        if journal.torn_lineno and not found:
            self._note(Diagnostic(str(self.root / JOURNAL_FILE), journal.torn_lineno, 1, "call-journal-torn",
                                  "the last line is incomplete (a run stopped while writing it" +
                                  (", or is writing it now): ignored" if report else "): cut off") +
                                  "; that one call's spend is not counted", severity="warning"))
        return journal.good_bytes if journal.torn_lineno else -1

    def died_in_flight(self, manifest: RunManifest | None = None) -> list[DiedSpend]:
        """Trial attempts whose calls only the journal records: their process died before writing them.

        ``manifest``: the run.json about to be written (its interrupted-spend entries account for
        their executions); by default the one on disk.
        """
        found: list[Diagnostic] = []
        try:
            journal = self._journal_read.read(self.root, found)
        except ConfinedPathError as exc:
            raise RunFolderError([exc.diagnostic()]) from None
        if found:
            raise RunFolderError(found[:20])
        lines = self._contents()
        manifest = manifest if manifest is not None else self._read_manifest()
        died = journal_died(journal, lambda key, attempt: (key, attempt) in lines.by_identity,
                            [(e.key, e.at) for e in manifest.interrupted_spend], str(self.root / JOURNAL_FILE), found)
        if found:
            raise RunFolderError(found[:20])
        return died

    def unanswered_reserved_usd(self) -> float:
        """The worst cases reserved by sends of trials that died in flight with no outcome after them."""
        return round(math.fsum(d.unanswered_max_usd for d in self.died_in_flight()), 9)

    def superseded_spent_usd(self) -> float:
        """What attempts spent that a later attempt of the same trial superseded (an aborted trial rerun)."""
        latest = {id(entry) for entry in self._contents().latest().values()}
        return round(math.fsum(known_spend(e.line) for e in self._contents().entries if id(e) not in latest), 9)

    def unfinished_spent_usd(self, died: Sequence[DiedSpend] | None = None) -> float:
        """Spend outside the finished trials' records: interrupted trials and trials that died in flight (known part).

        ``died``: :meth:`died_in_flight`, when the caller has it already.
        """
        died = self.died_in_flight() if died is None else died
        return round(self.interrupted_spent_usd() + math.fsum(d.known_usd for d in died), 9)

    def spend_note(self, died: Sequence[DiedSpend] | None = None,
                   finished: Sequence[dict[str, Any]] | None = None) -> str:
        """``summary.md``'s paragraph on money no row holds ("" when there is none); ``died`` and ``finished``:
        :meth:`died_in_flight` and the values of :meth:`finished`, when the caller has them already."""
        interrupted, superseded = self.interrupted_spent_usd(), self.superseded_spent_usd()
        died = self.died_in_flight() if died is None else died
        parts = []
        if interrupted:
            parts.append(f"interrupted trials ${interrupted:.4f}")
        if died:
            agent = [d.agent_cost_usd for d in died]
            user = [d.user_cost_usd for d in died]
            unknown = sum(d.unknown_cost_calls for d in died)
            unanswered = sum(d.unanswered_sends for d in died)
            parts.append(f"{len(died)} trial attempt(s) that died in flight ${math.fsum(d.known_usd for d in died):.4f} "
                         f"(agent {_usd_or_unknown(agent)}, user {_usd_or_unknown(user)}"
                         + (f"; {unknown} call(s) of unknown cost not in it" if unknown else "")
                         + (f"; {unanswered} send(s) with no outcome recorded (sent; outcome and cost unknown) "
                            "not in it" if unanswered else "") + ")")
        if superseded:
            parts.append(f"superseded attempts of rerun trials ${superseded:.4f}")
        from capplan.trials.run_folder.summary import split_unknown

        old = [line for line in (self.finished().values() if finished is None else finished) if split_unknown(line)]
        note = ""
        if old:
            combined = math.fsum(line["cost_usd"] or 0.0 for line in old)
            note = (f"\n**Split unknown**: {len(old)} trial(s) were recorded by an older capplan, whose cost_usd is "
                    f"agent + user simulator combined (${combined:.4f}, in the total); their agent and user "
                    "columns say unknown.\n")
        if not parts:
            return note
        return ("\n**Spend in no row** (in the total above): " + "; ".join(parts) +
                f". run.json lists each trial; {JOURNAL_FILE} has every call.\n" + note)

    def _note_torn(self, lines: _Lines) -> None:
        """``report`` leaves a torn line where it is: a run may still be appending to the file."""
        if lines.torn is None:
            return
        self._note(Diagnostic(str(self.runs), lines.torn_lineno, 1, "run-line-torn",
                              "the last line is incomplete (a run stopped while writing it, or is writing it now): "
                              "ignored here; the next `capplan trial run` of this folder sets it aside and runs "
                              "its trial again", severity="warning"))

    def _note(self, diag: Diagnostic) -> None:
        key = (diag.file, diag.line, diag.message)
        if key in self._noted:
            return
        self._noted.add(key)
        text = diag.render()
        self.notes.append(text)
        if self._notify is not None:
            self._notify(text)

    def _mismatch(self, specs: Sequence[TrialSpec]) -> list[Diagnostic]:
        by_key = {str(s.key): s for s in specs}
        found = []
        for key, entry in self._contents().latest().items():
            spec = by_key.get(key)
            if spec is None:
                continue
            line = entry.line
            if line.plan_fingerprint != spec.plan_fingerprint or line.task_sha256 != spec.task_sha256:
                found.append(Diagnostic(
                    str(self.runs), entry.lineno, 1, "run-mismatch",
                    f"trial {key} was run with another plan or task file "
                    f"(plan {line.plan_fingerprint[:12]}…, task {line.task_sha256[:12]}…)",
                    hint="use a new --out folder to compare them"))
        return found

    def _contents(self) -> _Lines:
        with self._lock:
            if self._lines is None:
                diags: list[Diagnostic] = []
                lines = self._read_lines(diags)
                if lines is None:
                    raise RunFolderError(diags)
                self._lines = lines
            return self._lines

    def finished(self) -> dict[str, dict[str, Any]]:
        """The record of the highest attempt per trial key, so no trial is counted twice."""
        return {key: entry.data for key, entry in self._contents().latest().items()}

    def spent_usd(self) -> float:
        """What every attempt cost, superseded ones included (that money was spent), each record once."""
        # an unknown cost (null) cannot be counted; the run warns at its start that the budget misses it
        return math.fsum(known_spend(entry.line) for entry in self._contents().entries)

    def lines(self) -> list[dict[str, Any]]:
        """Every distinct record of ``runs.jsonl`` in file order (a repeated line is one record)."""
        return [entry.data for entry in self._contents().entries]

    # -- writing ---------------------------------------------------------------------------

    def open(self, specs: Iterable[TrialSpec], *, settings: RunSettings | None = None,
             command: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
        """Create or resume the folder for ``specs``; returns the finished lines by trial key.

        Everything :meth:`check` refuses is refused before anything is written; a torn last
        line is then set aside and the manifest updated: this run's identity (``settings``), a
        run id when the folder has none, and a new invocation with its start time and ``command``.
        """
        from capplan.trials.run_folder.run_identity import new_run_id, utc_now

        specs = list(specs)
        if self._checked != _identities(specs):  # checked just before (the command does, early)
            self.check(specs, settings=settings)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RunFolderError([Diagnostic("--out", 1, 1, "out-unwritable",
                                             f"{self.root}: cannot create the folder: {exc.strerror or exc}")]) from None
        self._hold_writer()
        # another writer may have changed the folder since it was checked: read and check it again, under the lock
        self._lines = None
        self.check(specs, settings=settings)
        lines = self._contents()
        self._set_torn_aside(lines)
        cut = self._journal_torn([], report=False)
        if cut >= 0:  # a kill mid-append: the next line must not be glued to the fragment
            confined.truncate(self.root, (JOURNAL_FILE,), cut)
        confined.remove_leftovers(self.root, (), _TOP_LEFTOVERS)
        trial_folders = sorted({trial_parts(s.plan_key, s.task_id, s.index) for s in specs})
        # a new run has no trials folder yet, so none of its trial folders can hold leftovers: one look, not one per trial
        if trial_folders and confined.folder_exists(self.root, trial_folders[0][:1]):
            for folder in trial_folders:
                confined.remove_leftovers(self.root, folder, _TRIAL_LEFTOVERS)
        data = self._read_manifest().model_dump(mode="json")
        now = utc_now()
        data["version"] = 2
        data["run_id"] = data["run_id"] or new_run_id()
        data["started_at"] = data["started_at"] or now
        data["ended_at"] = None
        shown = list(command) if command is not None else []
        data["command"] = data["command"] if data["command"] is not None else shown
        data["invocations"].append({"started_at": now, "ended_at": None, "command": shown})
        if settings is not None:
            data["settings"] = settings.model_dump(mode="json")
        for spec in specs:
            self._user_plans[str(spec.key)] = spec.user_plan_fingerprint
            data["plans"][spec.plan_key] = spec.plan_fingerprint
            data["tasks"][spec.task_id] = {"path": spec.recorded_task_path, "sha256": spec.task_sha256,
                                           "pack": spec.task_pack}
        self._with_died(data)
        self._write_manifest(data)
        self.run_id = data["run_id"]
        journalled = self._journalled_attempts()
        self.journal = CallJournal(self.root, self.run_id,
                                   lambda key: max(lines.attempts(key), journalled.get(key, 0)))
        self.journal.follower = self._journal_read  # its lines join the read-back memo as they are written
        return self.finished()

    def _hold_writer(self) -> None:
        """Take the folder's writer lock (one writer per run folder), kept until :meth:`release`."""
        if self._writer is not None and self._writer.held:
            return
        try:
            self._writer = folder_lock.hold(self.root)
        except ConfinedPathError as exc:
            raise RunFolderError([exc.diagnostic()]) from None

    def release(self) -> None:
        """Let the next writer in (the driver calls it when the run ends; a process's end does it too)."""
        self._close_files()
        if self._writer is not None:
            self._writer.release()

    def _journalled_attempts(self) -> dict[str, int]:
        """Per trial key, the highest attempt ``calls.jsonl`` has an execution under (read as open checked it).

        A new execution is numbered past them: an execution killed between its ``end`` line and its
        ``runs.jsonl`` line must stay unaccounted (its calls counted as died in flight), which it
        would not if its rerun's line took the same attempt number.
        """
        highest: dict[str, int] = {}
        for entry in self._journal_read.read(self.root, []).executions.values():
            highest[entry.key] = max(highest.get(entry.key, 0), entry.attempt)
        return highest

    def _set_torn_aside(self, lines: _Lines) -> None:
        if lines.torn is None:
            return
        n = 1
        while not confined.create_new(self.root, (f"{TORN_PREFIX}{n}",), lines.torn):
            n += 1
        confined.truncate(self.root, (RUNS_FILE,), lines.good_bytes)
        self._note(Diagnostic(str(self.runs), lines.torn_lineno, 1, "run-line-torn",
                              f"the last line was incomplete (a run stopped while writing it): moved to "
                              f"{TORN_PREFIX}{n}; its trial runs again", severity="warning"))
        lines.torn = None

    def write(self, records: TrialRecords, renderer: RecordRenderer | None = None) -> None:
        """Write one finished trial: its files, then its runs.jsonl line (the commit marker).

        ``renderer``: renders the record files' YAML on a helper process (the same bytes).
        """
        key = records.key
        try:
            folder = trial_parts(key.plan_key, key.task_id, key.index)
        except UnsafeName as exc:
            raise ConfinedPathError(self.root / "trials", "unsafe-name", f"{exc}, so it cannot name a folder of the run",
                                    "names that become folders must be short slugs") from None
        stamp = {"run_id": self.run_id, "user_plan_fingerprint": self._user_plans.get(
            str(key), records.run_line.get("user_plan_fingerprint"))}
        # the line must read back before anything of the trial is written
        first_text = json.dumps({**records.run_line, **stamp, "attempt": 1}, sort_keys=True, ensure_ascii=False)
        first_line = self._readable(first_text, key)
        if records.rendered is not None:  # the worker process that made the records rendered them
            trajectory, metrics = records.rendered
        elif renderer is not None:
            trajectory, metrics = renderer.render((records.trajectory, records.metrics))
        else:
            trajectory, metrics = dump_yaml(records.trajectory), dump_yaml(records.metrics)
        self._folders.write_atomic_many(folder, (("trajectory.yaml", trajectory), ("metrics.yaml", metrics)))
        lines = self._contents()
        with self._lock:
            attempt = self.journal.attempt_of(str(key)) if self.journal is not None else lines.attempts(str(key)) + 1
            data = {**records.run_line, **stamp, "attempt": attempt}
            if attempt == 1:  # the line checked above, to the byte: not encoded and read back twice
                text, line = first_text, first_line
            else:
                text = json.dumps(data, sort_keys=True, ensure_ascii=False)
                line = self._readable(text, key)
            if self.journal is not None:
                self.journal.raise_failure()
                # before the line: an end line without its runs.jsonl line is read as a trial that died
                self.journal.written(str(key), data["attempt"])
            self._append_run_line((text + "\n").encode("utf-8"))
            lines.complete += 1
            lines.add(_Entry(lines.complete, line))

    def _append_run_line(self, data: bytes) -> None:
        """One line appended to ``runs.jsonl`` with one ``write``; the file is walked, checked and opened once
        per invocation (as :func:`confined.append` checks it), not once per trial (called under the lock)."""
        if self._runs.fd is None:
            self._runs.fd = confined.open_append(self.root, (RUNS_FILE,))
        try:
            confined.write_all(self._runs.fd, data)
        except OSError as exc:
            raise ConfinedPathError(self.runs, "out-unwritable", f"cannot append to it: {exc.strerror or exc}") from None

    def _close_files(self) -> None:
        """The invocation is over: what it kept open is closed (a stray late write opens it again)."""
        self._folders.close()
        with self._lock:
            self._runs.close()

    def _readable(self, text: str, key: TrialKey) -> RunLine:
        """``text`` as the run line of trial ``key``, validated exactly as it will be read back."""
        try:
            line = RunLine.model_validate_json(text, strict=True)
        except ValidationError as exc:
            raise ConfinedPathError(self.runs, "run-line-invalid", "; ".join(
                _describe(e) for e in exc.errors(include_input=False))) from None
        if line.key != str(key):
            raise ConfinedPathError(self.runs, "run-line-invalid", "the trial's line is for another trial than its files")
        return line

    def mark_interrupted(self, keys: Iterable[TrialKey], spend: Mapping[str, float | None] | None = None,
                         known: Mapping[str, float] | None = None) -> None:
        """Record the trials that did not finish (a re-run of the same command runs them) and the invocation's end.

        ``spend``: what each trial that stopped part-way had spent (trial key -> USD, None when
        unknown); added to ``interrupted_spend``, since its rerun starts from nothing. ``known``: for a
        trial whose spend is unknown, what its calls of known cost spent (kept as the entry's lower bound).
        """
        from capplan.trials.run_folder.run_identity import utc_now

        data = self._read_manifest().model_dump(mode="json")
        now = utc_now()
        data["interrupted"] = sorted({str(k) for k in keys})
        for key, cost in sorted((spend or {}).items()):
            if self.journal is not None:
                self.journal.interrupted(key, now)  # matched to the entry below by key and time
            entry: dict[str, Any] = {"key": key, "cost_usd": _rounded(cost), "at": now}
            if cost is None and (known or {}).get(key):
                entry["known_usd"] = _rounded((known or {})[key])
            data["interrupted_spend"].append(entry)
        data["interrupted_spend_usd"] = _rounded(math.fsum(
            e["cost_usd"] if e["cost_usd"] is not None else (e.get("known_usd") or 0.0)
            for e in data["interrupted_spend"])) or 0.0
        data["ended_at"] = now
        if data["invocations"] and data["invocations"][-1]["ended_at"] is None:
            data["invocations"][-1]["ended_at"] = now
        self._with_died(data)
        self._write_manifest(data)
        if self.journal is not None:
            self.journal.close()  # the invocation is over; a stray late call reopens it
        self._close_files()

    def clear_interrupted(self) -> None:
        """Every trial finished: nothing is left to rerun; the invocation's end is recorded."""
        self.mark_interrupted(())

    def interrupted_spent_usd(self) -> float:
        """What interrupted trial attempts spent, every invocation of the run (unknown costs as 0)."""
        if not os.path.lexists(self.manifest):
            return 0.0
        return self._read_manifest().interrupted_spend_usd

    def interrupted_unknown_trials(self) -> int:
        """How many interrupted trial attempts, every invocation of the run, spent an unknown amount."""
        if not os.path.lexists(self.manifest):
            return 0
        return sum(1 for entry in self._read_manifest().interrupted_spend if entry.cost_usd is None)

    def _with_died(self, data: dict[str, Any]) -> None:
        """``data`` (run.json) with the trials that died in flight as the journal has them now."""
        died = self.died_in_flight(RunManifest.model_validate(data))
        data["died_in_flight"] = [d.to_json() for d in died]
        data["died_in_flight_usd"] = round(math.fsum(d.known_usd for d in died), 9)

    def _write_manifest(self, data: dict[str, Any]) -> None:
        text = json.dumps(data, indent=2, sort_keys=True) + "\n"
        RunManifest.model_validate_json(text, strict=True)  # what is written must read back
        confined.write_atomic(self.root, (MANIFEST_FILE,), text.encode("utf-8"))


def _usd_or_unknown(values: Sequence[float | None]) -> str:
    known = sum(v for v in values if v is not None)
    if all(v is None for v in values):
        return "unknown"
    return f"${known:.4f}" + (" known" if any(v is None for v in values) else "")


def _rounded(cost: float | None) -> float | None:
    return None if cost is None else round(cost, 9)


def _identities(specs: Iterable[TrialSpec]) -> tuple[tuple[str, str, str], ...]:
    return tuple(sorted((str(s.key), s.plan_fingerprint, s.task_sha256) for s in specs))


def _parse_line(chunk: bytes, lineno: int, where: str, found: list[Diagnostic]) -> _Entry | None:
    """One complete line as a record; its problem goes to ``found`` (then None)."""
    def bad(code: str, message: str, col: int = 1, hint: str | None = None) -> None:
        found.append(Diagnostic(where, lineno, col, code, message,
                                hint=hint or "runs.jsonl is written by capplan only; restore this line from a "
                                             "backup or remove it (its trial then runs again)"))

    if len(chunk) > MAX_LINE_BYTES:
        bad("run-line-too-long", f"is {len(chunk)} bytes long; a run line is at most {MAX_LINE_BYTES}")
        return None
    try:
        text = chunk.decode("utf-8")
    except UnicodeDecodeError:
        bad("run-line-json", "is not UTF-8 text")
        return None
    if not text.strip():
        bad("run-line-blank", "is blank; every line of runs.jsonl is one finished trial",
            hint="remove the blank line")
        return None
    try:
        # the C parser first (a run has as many lines as trials); a line it refuses, or that
        # repeats a key or holds NaN, is parsed again strictly for the exact problem and place
        data = json.loads(text, object_pairs_hook=_pairs_once, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        try:
            loads_strict(text)
        except (StrictJSONError, InputLimitError) as exc:
            bad("run-line-json", str(exc), exc.col)
            return None
        except ValueError as exc:
            bad("run-line-json", f"not valid JSON: {_short(exc)}")
            return None
        bad("run-line-json", "not valid JSON")
        return None
    if not isinstance(data, dict):
        bad("run-line-not-object", f"must be a JSON object, not {_json_kind(data)}")
        return None
    try:
        line = RunLine.model_validate_json(text, strict=True)
    except ValidationError as exc:
        for err in exc.errors(include_input=False):
            bad("run-line-invalid", _describe(err))
        return None
    return _Entry(lineno, line)


def _pairs_once(items: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(items)
    if len(out) != len(items):
        raise ValueError("duplicate key")
    return out


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def _describe(err: Any) -> str:
    """A pydantic error as ``field: problem``; never the value (it may be anything, a secret included)."""
    loc = ".".join(_short_key(p) for p in err["loc"] if not (isinstance(p, str) and "[" in p))
    kind = err["type"]
    if kind == "missing":
        return f"required key {loc!r} is missing"
    if kind == "extra_forbidden":  # the key itself is not quoted: it may be anything, a secret included
        parent = loc.rpartition(".")[0]
        return f"{parent + ': ' if parent else ''}has a key that is not one of this record's fields"
    message = str(err["msg"]).removeprefix("Value error, ")
    return f"{loc}: {message}" if loc else message


def _shown_name(name: str) -> str:
    """A file name found in a folder, as it may be printed (it may hold escapes or be long)."""
    return name if len(name) <= 60 and name.isprintable() else f"<a name of {len(name)} characters>"


def _short_key(part: object) -> str:
    text = str(part)
    return text if len(text) <= 40 and text.isprintable() else f"<a key of {len(text)} characters>"


def _short(exc: Exception) -> str:
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__


def _json_kind(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return "null" if value is None else type(value).__name__


def _lkind(path: Path) -> str:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return "absent"
    except NotADirectoryError:
        return "under-file"
    if stat.S_ISLNK(st.st_mode):
        return "link"
    if stat.S_ISDIR(st.st_mode):
        return "folder"
    return "file" if stat.S_ISREG(st.st_mode) else "special"


_KIND_PROBLEM = {
    "link": ("run-folder-symlink", "is a symbolic link; capplan does not follow links inside a run folder"),
    "folder": ("run-folder-not-a-file", "should be a file but is a folder"),
    "special": ("special-file", "is a device, FIFO or socket, not a regular file"),
    "file": ("run-folder-not-a-folder", "should be a folder but is a file"),
}


def _not_a_file(path: Path) -> Diagnostic | None:
    """A located problem when ``path`` exists as anything but a regular file."""
    kind = _lkind(path)
    if kind in ("absent", "file"):
        return None
    code, message = _KIND_PROBLEM[kind]
    return Diagnostic(str(path), 1, 1, code, message, hint="move it away (or choose a new --out)")


def _check_trial_folders(root: Path, keys: Iterable[tuple[str, str, int]]) -> list[Diagnostic]:
    """Every trial folder on the way to ``keys`` is a real folder (or absent), its files real files.

    Walked from the top, so a link is found where it sits and nothing below it is looked at
    through it; a folder seen once is not looked at again.
    """
    diags: list[Diagnostic] = []
    seen: dict[tuple[str, ...], bool] = {}  # folder parts -> usable (exists as a real folder)
    for plan_key, task_id, index in keys:
        parts = trial_parts(plan_key, task_id, index)
        usable = True
        for depth in range(1, len(parts) + 1):
            prefix = parts[:depth]
            if prefix in seen:
                usable = seen[prefix]
                if not usable:
                    break
                continue
            kind = _lkind(root.joinpath(*prefix))
            if kind == "absent":
                seen[prefix] = False
                usable = False
                break
            if kind != "folder":
                code, message = _KIND_PROBLEM["link" if kind == "link" else "file"]
                diags.append(Diagnostic(str(root.joinpath(*prefix)), 1, 1, code, message,
                                        hint="move it away (or choose a new --out)"))
                seen[prefix] = False
                usable = False
                break
            seen[prefix] = True
        if usable:
            for name in TRIAL_FILES:
                problem = _not_a_file(root.joinpath(*parts, name))
                if problem is not None:
                    diags.append(problem)
    return diags
