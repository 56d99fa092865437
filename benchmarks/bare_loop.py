"""The bare Python trial loop: this workload's turns with nothing but the wire and the records.

``benchmarks/trial_loop.py --workers-only`` runs it beside capplan, to show where a Python runner's
floor lies: what a turn costs in CPU when a loop does only what every runner must.

Each of ``concurrency`` threads takes trials in turn and keeps one ``http.client`` connection alive.
A trial is the benchmark's task with nothing around it: the system prompt and three user turns, each
answered by the scripted agent's tool call and then its text; the tool (add an amount to a counter)
runs inline on the thread. Per call the loop encodes the request body (the messages and the tool's
strict schema), appends a send line to one journal file before sending and a call line after (the
answer's finish reason, usage and latency; about the sizes of capplan's lines), and decodes the
answer. Per trial it writes one JSON record, the messages and the calls.

What it leaves out is what capplan does besides: no plan (request building, parameter rules, codecs),
no retries, no bounds on what the server sends, no attempt deadlines (only ``http.client``'s
timeout on each read), no redaction, no tool-argument
validation, no tool containment (a tool that hangs would hang the loop), no state snapshots, no
YAML, no budget, no resume. With ``processes`` > 1 the trials are split over that many child
processes, each with its share of the threads, writing journals of their own (capplan's workers hand
their lines to one writer).

Run from the project root:  python benchmarks/bare_loop.py [--trials 500] [--concurrency 32]
                            [--latency-ms 8] [--processes N]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script, not only as ``-m benchmarks.bare_loop``

from benchmarks.loopback_run import CHAT_SERVER, Measured, against_server  # noqa: E402

SYSTEM = "You keep a counter."
USER_TURNS = ("add one", "and one more", "thanks, that's all")
TOOLS = [{"type": "function", "function": {
    "name": "add", "description": "Add an amount to the counter.", "strict": True,
    "parameters": {"type": "object", "properties": {"amount": {"type": "integer", "description": "How much."}},
                   "required": ["amount"], "additionalProperties": False}}}]
#: how long one answer may take before the loop gives up (a bound, not a feature: the server answers in ms)
ANSWER_TIMEOUT_S = 30.0
#: how long a child process's share of the trials may take
CHILD_TIMEOUT_S = 600.0


class _Journal:
    """One append-only file of JSON lines, written whole under a lock (the run's one journal)."""

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._lock = threading.Lock()
        self.run_id = uuid.uuid4().hex

    def append(self, line: dict[str, Any]) -> None:
        data = (json.dumps(line, separators=(",", ":")) + "\n").encode("utf-8")
        with self._lock:
            os.write(self._fd, data)

    def close(self) -> None:
        os.close(self._fd)


def _trial(index: int, conn: http.client.HTTPConnection, path: str, journal: _Journal, out: Path) -> int:
    """Run trial ``index`` on ``conn``; its record goes to ``out``. Returns the turns it took."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    calls: list[dict[str, Any]] = []
    counter = 0
    # the fields capplan's journal lines carry, so that the lines are about the same size
    head = {"run_id": journal.run_id, "execution": uuid.uuid4().hex, "key": f"bare/count/{index}", "attempt": 1,
            "plan_key": "gpt-5", "task_id": "count", "index": index}
    for text in USER_TURNS:
        messages.append({"role": "user", "content": text})
        while True:
            turn = len(calls)
            request_id = uuid.uuid4().hex
            body = json.dumps({"model": "gpt-5", "messages": messages, "tools": TOOLS,
                               "max_completion_tokens": 4096}).encode("utf-8")
            journal.append({**head, "kind": "send", "at": round(time.time(), 3), "send": {
                "request_id": request_id, "turn": turn, "role": "agent", "attempt": 1, "max_usd": None}})
            started = time.perf_counter()
            conn.request("POST", path, body, {"Content-Type": "application/json", "Authorization": "Bearer sk-bare"})
            answer = conn.getresponse()
            data: dict[str, Any] = json.loads(answer.read())
            if answer.status != 200:
                raise RuntimeError(f"the server answered {answer.status}: {data}")
            choice = data["choices"][0]
            call = {"turn": turn, "role": "agent", "attempt": 1, "status": "ok", "outcome": "accepted",
                    "finish_reason": choice.get("finish_reason"), "response_id": data.get("id"),
                    "usage": data.get("usage"), "cost_usd": None, "cost_source": None, "error_class": None,
                    "error_type": None, "retry_class": None, "retry_after_s": None, "wait_s": 0.0,
                    "latency_s": time.perf_counter() - started, "response_problems": []}
            calls.append(call)
            journal.append({**head, "kind": "call", "at": round(time.time(), 3), "request_id": request_id,
                            "call": call})
            message = {k: v for k, v in choice["message"].items() if v is not None}
            messages.append(message)
            tool_calls = message.get("tool_calls") or []
            for tool_call in tool_calls:
                counter += int(json.loads(tool_call["function"]["arguments"])["amount"])
                messages.append({"role": "tool", "tool_call_id": tool_call["id"], "content": str(counter)})
            if not tool_calls:
                break
    (out / f"{index}.json").write_text(json.dumps({**head, "messages": messages, "calls": calls, "counter": counter},
                                                  indent=1))
    return len(calls)


def run_trials(base_url: str, indices: list[int], threads: int, out: Path) -> int:
    """Run trials ``indices`` on ``threads`` threads against the server at ``base_url``; the turns they took."""
    parts = urlsplit(base_url)
    path = parts.path.rstrip("/") + "/chat/completions"
    out.mkdir(parents=True, exist_ok=True)
    journal = _Journal(out / "calls.jsonl")
    todo = list(reversed(indices))
    lock = threading.Lock()
    turns: list[int] = []
    failures: list[BaseException] = []

    def take() -> None:
        assert parts.hostname is not None and parts.port is not None
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=ANSWER_TIMEOUT_S)
        try:
            while True:
                with lock:
                    if not todo or failures:
                        return
                    index = todo.pop()
                taken = _trial(index, conn, path, journal, out)
                with lock:
                    turns.append(taken)
        except BaseException as exc:  # noqa: BLE001 - raised again on the calling thread
            with lock:
                failures.append(exc)
        finally:
            conn.close()

    workers = [threading.Thread(target=take, name=f"bare-{n}") for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    journal.close()
    if failures:
        raise failures[0]
    return sum(turns)


def run_processes(base_url: str, trials: int, concurrency: int, processes: int, out: Path) -> int:
    """Run ``trials`` trials split over ``processes`` child processes (each with its share of ``concurrency``
    threads and its own journal under ``out``); the turns they took. Every child is waited for."""
    children = []
    for n in range(processes):
        threads = max(1, concurrency // processes + (1 if n < concurrency % processes else 0))
        children.append(subprocess.Popen(
            [sys.executable, "-m", "benchmarks.bare_loop", "--child", base_url, str(out / str(n)),
             str(n), str(trials), str(processes), str(threads)],
            cwd=ROOT, stdout=subprocess.PIPE, text=True))
    turns, failed = 0, []
    for child in children:
        try:
            output, _ = child.communicate(timeout=CHILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            failed.append(f"pid {child.pid} ran past {CHILD_TIMEOUT_S:.0f} s")
            continue
        if child.returncode != 0:
            failed.append(f"pid {child.pid} exited with {child.returncode}")
        else:
            turns += int(output.strip())
    if failed:
        raise RuntimeError("bare-loop processes failed: " + "; ".join(failed))
    return turns


def measure_bare(trials: int, concurrency: int, out: Path, *, latency_s: float,
                 processes: int = 1) -> Measured:
    """``trials`` trials at ``concurrency`` over ``processes`` processes against the loopback chat server answering
    after ``latency_s``, timed as ``benchmarks/trial_loop.py`` times capplan's runs."""
    turns: list[int] = []

    def prepare(base: str) -> Callable[[], object]:
        run_trials(base, [trials + 1], 1, out / "warm-up")  # the server's first answers, this process's imports
        if processes == 1:
            return lambda: turns.append(run_trials(base, list(range(trials)), concurrency, out / "run"))
        return lambda: turns.append(run_processes(base, trials, concurrency, processes, out / "run"))

    wall, cpu, command_cpu, server_cpu = against_server(CHAT_SERVER, latency_s, prepare)
    return Measured(wall, turns[0], cpu, server_cpu, command_cpu)


def _child(argv: list[str]) -> None:
    """A child process: its share (every ``processes``-th trial from ``first``) on its threads; prints its turns."""
    if len(argv) != 6 or not all(part.isdigit() and len(part) <= 7 for part in argv[2:]):
        print("bare_loop.py: error: --child is how run_processes starts its children: "
              "--child BASE_URL OUT FIRST TRIALS PROCESSES THREADS", file=sys.stderr)
        raise SystemExit(2)
    base_url, out, first, trials, processes, threads = argv
    indices = list(range(int(first), int(trials), int(processes)))
    print(run_trials(base_url, indices, int(threads), Path(out)), flush=True)


def _count(text: str) -> int:
    """A whole number from 1 to 1 000 000 (argparse words the error; a long value is not echoed whole)."""
    if not text.isdigit() or len(text) > 7 or not 1 <= int(text) <= 1_000_000:
        shown = text if len(text) <= 20 else text[:20] + "..."
        raise argparse.ArgumentTypeError(f"{shown!r} is not a whole number from 1 to 1000000")
    return int(text)


def _latency_ms(text: str) -> float:
    """Milliseconds, more than 0 and at most 60 000."""
    try:
        value = float(text) if len(text) <= 20 else float("nan")
    except ValueError:
        value = float("nan")
    if not 0 < value <= 60_000:  # nan fails too
        shown = text if len(text) <= 20 else text[:20] + "..."
        raise argparse.ArgumentTypeError(f"{shown!r} is not a number of milliseconds above 0 and at most 60000")
    return value


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        _child(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=_count, default=500, help="trials of the 6-turn task to run (default 500)")
    parser.add_argument("--concurrency", type=_count, default=32,
                        help="threads running trials, over every process (default 32)")
    parser.add_argument("--latency-ms", type=_latency_ms, default=8.0,
                        help="the loopback server's answer time, more than 0: the ideal time is the turns times it "
                             "over the concurrency (default 8)")
    parser.add_argument("--processes", type=_count, default=1, help="processes the trials are split over (default 1)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = measure_bare(args.trials, args.concurrency, Path(tmp), latency_s=args.latency_ms / 1e3,
                           processes=args.processes)
    ideal = run.turns * args.latency_ms / 1e3 / args.concurrency
    print(f"bare Python loop, {args.trials} trials ({run.turns} turns) at concurrency {args.concurrency}, "
          f"{args.latency_ms:g} ms, {args.processes} process(es): {run.wall / ideal:.2f}x the ideal, "
          f"CPU {run.cpu / run.turns * 1e3:.3f} ms/turn + server {run.server_cpu / run.turns * 1e3:.3f} ms/turn")


if __name__ == "__main__":
    main()
