"""Where a turn's CPU goes: the trial-loop workload in one process, its CPU per turn split by part.

The workload of ``benchmarks/trial_loop.py``'s worker rows (the catalogue's gpt-5 compiled onto chat
completions, the 6-turn task, the plan's direct transport, a loopback server in its own process),
run once through the real driver, backend and run folder with ``--workers 1``, and its CPU per turn
(user + sys) printed for each part of the process that spends it:

* per thread kind, as each thread's own CPU clock reads it when the thread ends: the trial threads
  (the loop, the executor, the transport, journalling each send and call, making the records), the
  task-code workers (environment, tools, state, grader), the run folder's writer thread (one
  trial's files and runs.jsonl line), and the main thread (the driver, the backend's feed);
* the record render helper's process, from ``RUSAGE_CHILDREN`` when it is waited for (it starts only for
  a document with over 16 KiB of text, so for this workload's trials the row reads 0);
* inside the trial threads, a few calls by their own thread's CPU clock: ``Client.generate`` and,
  within it, the transport's send and the response parse; the journal's send and call lines; the
  records a finished trial makes (a send line is journalled inside ``Client.generate``, as the
  send goes out).

Beside each thread kind's CPU, its context switches per turn (Linux, from ``/proc/thread-self/status``
as the thread starts and ends): voluntary ones (the thread waited: for an answer, a lock, a task-code
call, or the interpreter lock after a system call let go of it) and involuntary ones (the kernel
took the core away). At ``--concurrency 32`` in one process most of a turn's CPU beyond its
``--concurrency 1`` figure goes with the voluntary ones: each system call that lets go of the
interpreter lock is a chance to wait for it, so the count is what a saving of that kind moves.

The parts of a thread are measured by wrapping the calls named above for this run only (a wrapper
costs about a microsecond a call; the thread rows also hold the one warm-up trial ``trial_loop`` runs
first); the whole is the same figure ``trial_loop.py`` prints. The rows
are a map for the next saving, not a target: ``benchmarks/trial_loop.py`` holds the targets.

Run from the project root:  python benchmarks/turn_breakdown.py [--trials 500] [--concurrency 32] [--latency-ms 8]
                            [--work-dir DIR]
"""

from __future__ import annotations

import argparse
import collections
import functools
import os
import re
import resource
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import trial_loop  # noqa: E402
from capplan.executor import client as client_module  # noqa: E402
from capplan.executor import response_parser  # noqa: E402
from capplan.executor.direct import pool  # noqa: E402
from capplan.trials import runner  # noqa: E402
from capplan.trials.run_folder import call_journal  # noqa: E402
from capplan.trials.run_folder.render_process import RecordRenderer  # noqa: E402

#: part name -> [calls, CPU seconds]
_SPENT: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0])
#: thread kind -> [voluntary, involuntary] context switches of its threads
_SWITCHES: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
_LOCK = threading.Lock()
_STATUS = Path("/proc/thread-self/status")
#: the calls timed inside the trial threads, in the order printed (the indented ones are made inside
#: Client.generate: a send line is journalled as the send goes out)
_INSIDE = ("Client.generate", "  the transport's send (request, answer, body)", "  the response's parse",
           "  the journal's send lines", "the journal's call lines", "a finished trial's records")


def _add(part: str, seconds: float, calls: int = 1) -> None:
    with _LOCK:
        entry = _SPENT[part]
        entry[0] += calls
        entry[1] += seconds


def _switches() -> tuple[int, int] | None:
    """The calling thread's (voluntary, involuntary) context switches so far; None where the kernel does not say."""
    try:
        text = _STATUS.read_text()
    except OSError:
        return None
    found = dict(line.split(":", 1) for line in text.splitlines() if line.endswith(tuple("0123456789")) and ":" in line)
    try:
        return int(found["voluntary_ctxt_switches"]), int(found["nonvoluntary_ctxt_switches"])
    except (KeyError, ValueError):
        return None


def _add_switches(kind: str, before: tuple[int, int] | None, after: tuple[int, int] | None) -> None:
    if before is None or after is None:
        return
    with _LOCK:
        entry = _SWITCHES[kind]
        entry[0] += after[0] - before[0]
        entry[1] += after[1] - before[1]


def _timed(owner: Any, name: str, part: str) -> None:
    """Wrap ``owner.name`` so each call's CPU on its own thread is added to ``part``."""
    original: Callable[..., Any] = getattr(owner, name)

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.thread_time()
        try:
            return original(*args, **kwargs)
        finally:
            _add(part, time.thread_time() - started)

    setattr(owner, name, wrapper)


def _thread_kind(name: str) -> str:
    """A thread's kind from its name (the numbers and trial keys in it dropped)."""
    if name.startswith("task-code"):
        return "task-code"
    return re.sub(r"[-_ ]?\d+$", "", name.split(" ")[0])


def _count_threads() -> None:
    """Every thread started from now on adds its own CPU, when it ends, to its kind's row."""
    run = threading.Thread.run

    def counted(self: threading.Thread) -> None:
        started, switched = time.thread_time(), _switches()
        try:
            run(self)
        finally:
            kind = _thread_kind(self.name)
            _add(f"thread: {kind}", time.thread_time() - started)
            _add_switches(kind, switched, _switches())

    threading.Thread.run = counted  # type: ignore[method-assign]


def _count_the_render_helper() -> None:
    """The render helper's CPU, read when its process is waited for (the only child reaped in that call)."""
    close = RecordRenderer.close

    def counted(self: RecordRenderer) -> None:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        try:
            close(self)
        finally:
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            _add("process: the record render helper", (after.ru_utime + after.ru_stime)
                 - (before.ru_utime + before.ru_stime))

    RecordRenderer.close = counted  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency-ms", type=float, default=8.0, help="the loopback server's answer delay")
    parser.add_argument("--work-dir", type=Path, default=None,
                        help="the folder the run folder is made in (default: the system's temp folder; see "
                             "benchmarks/trial_loop.py --help)")
    args = parser.parse_args()
    if args.work_dir is not None and not args.work_dir.is_dir():
        parser.error(f"--work-dir {args.work_dir}: not a folder (make it first, or leave --work-dir out)")
    if args.trials < 1 or args.concurrency < 1 or args.latency_ms < 0:
        parser.error("--trials and --concurrency must be at least 1, --latency-ms at least 0")
    os.environ.setdefault("OPENAI_API_KEY", "sk-benchmark-loopback")
    _count_threads()
    _count_the_render_helper()
    for owner, name, part in ((client_module.Client, "generate", _INSIDE[0]), (pool._Connections, "send", _INSIDE[1]),
                              (response_parser.ResponseParser, "parse", _INSIDE[2]),
                              (call_journal.CallJournal, "send", _INSIDE[3]),
                              (call_journal.CallJournal, "record", _INSIDE[4]), (runner._Trial, "_records", _INSIDE[5])):
        _timed(owner, name, part)
    with tempfile.TemporaryDirectory(dir=args.work_dir) as tmp:
        task = trial_loop.write_task(Path(tmp) / "pack", turns=["add one", "and one more", "thanks, that's all"])
        plan = trial_loop.gpt5_plans(Path(tmp) / "gpt5")["chat"]
        main_started, main_switched = time.thread_time(), _switches()
        wall, turns, cpu = trial_loop.throughput(task, plan, args.trials, args.concurrency, Path(tmp) / "run",
                                                 latency_s=args.latency_ms / 1e3)
        main_cpu = time.thread_time() - main_started
        _add_switches("main", main_switched, _switches())
    ideal = args.trials * trial_loop.TURNS * args.latency_ms / 1e3 / args.concurrency
    against = f"{wall / ideal:.2f}x the ideal" if ideal > 0 else f"{wall:.2f} s"
    print(f"{args.trials} trials x {trial_loop.TURNS} turns at concurrency {args.concurrency}, {args.latency_ms:g} ms, "
          f"one process: wall {against}, CPU {cpu / turns * 1e6:.0f} us per turn (the loopback server's left out)")
    rows = [("main thread (the driver, the backend's feed)", main_cpu, "main")]
    rows += [(f"{part.removeprefix('thread: ')} threads", _SPENT[part][1], part.removeprefix("thread: "))
             for part in sorted(_SPENT) if part.startswith("thread: ")]
    rows += [(part.removeprefix("process: "), _SPENT[part][1], "") for part in _SPENT if part.startswith("process: ")]
    for label, seconds, kind in rows:
        switched = _SWITCHES.get(kind)
        switches = (f"   {switched[0] / turns:5.1f} + {switched[1] / turns:4.1f} switches per turn (waited + preempted)"
                    if switched is not None else "")
        print(f"  {label:56s} {seconds / turns * 1e6:7.0f} us per turn{switches}")
    print("inside the trial threads:")
    for part in _INSIDE:
        calls, seconds = _SPENT[part] if part in _SPENT else (0, 0.0)
        each = f" ({seconds / calls * 1e6:.0f} us a call)" if calls else ""
        print(f"  {part:54s} {seconds / turns * 1e6:7.0f} us per turn{each}")


if __name__ == "__main__":
    main()
