"""``capplan trial view`` at scale: the page of 1 000 and 10 000 synthetic trials, its size and render time.

A synthetic run folder is written as ``trial run`` writes one (``run.json``, ``runs.jsonl``, a
``trajectory.yaml`` and ``metrics.yaml`` per trial, through the run folder's own YAML dumper):
four models over a task pack, two trials per task (and the ``calls.jsonl`` journal the run
writes), each trial a short tool-using conversation
(user, agent tool call, tool result — one in eight longer than the view's collapse length —,
agent reply, a second user turn, a final answer) with its calls, usage and grade. Outcomes
are drawn from a seeded generator. The render is timed in phases (reading the folder,
building the page's data, rendering the HTML) and the file size printed::

    .venv/bin/python benchmarks/trial_view.py                 # 1 000 and 10 000 trials
    .venv/bin/python benchmarks/trial_view.py --trials 2000   # one size

Each size is timed twice over the same folder: each trial's calls read from ``calls.jsonl`` and
only the rest of ``metrics.yaml`` parsed (what ``trial view`` does), then every ``metrics.yaml``
parsed whole (as before); the two pages must be the same bytes.

The time to open the page in a browser is measured by the browser test
(``tests/trials/results/test_view_browser.py``, printed with ``-s``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from capplan.trials.run_folder.records import CallRecord, RunLine, RunManifest  # noqa: E402
from capplan.trials.run_folder.folder import dump_yaml  # noqa: E402

MODELS = ("model-a", "model-b", "model-c", "model-d")
TRIALS_PER_TASK = 2
_OUTCOMES = (("completed", "user_stop", True), ("completed", "user_stop", False), ("completed", "max_turns", False),
             ("error", "error", False), ("aborted", "rate_limit", None))


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _usage(prompt: int, completion: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "reasoning_tokens": 0, "cached_tokens": 0,
            "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


def _call(role: str, turn: int, prompt: int, completion: int, finish: str) -> dict[str, Any]:
    return {"role": role, "turn": turn, "outcome": "accepted", "status": "ok", "error_class": None, "error_type": None,
            "attempt": 1, "retry_class": None, "usage": _usage(prompt, completion), "cost_usd": 0.0001 * turn + 0.0002,
            "cost_source": "pricing", "wait_s": 0.0, "latency_s": 0.4 + 0.01 * turn, "finish_reason": finish,
            "openrouter_generation_id": f"gen-{turn:04d}", "gateway_route": None, "gateway_route_kind": None,
            "key_index": None}


def _journal_lines(identity: dict[str, Any], calls: list[dict[str, Any]], run_id: str) -> list[str]:
    """What ``calls.jsonl`` holds for one finished attempt: a send and a call line per call, then its end."""
    execution = _sha(identity["key"])[:32]
    base = {"attempt": 1, "execution": execution, "index": identity["index"], "key": identity["key"],
            "plan_key": identity["plan_key"], "run_id": run_id, "task_id": identity["task_id"]}
    lines = []
    for n, call in enumerate(calls):
        request = f"{execution[:24]}{n:08d}"
        lines.append(json.dumps({**base, "at": 1.0, "kind": "send", "send": {
            "attempt": call["attempt"], "max_usd": None, "request_id": request, "role": call["role"],
            "turn": call["turn"]}}, sort_keys=True, separators=(",", ":")))
        lines.append(json.dumps({**base, "at": 1.0, "kind": "call", "call": call, "request_id": request},
                                sort_keys=True, separators=(",", ":")))
    lines.append(json.dumps({"as": "written", "attempt": 1, "execution": execution, "key": identity["key"],
                             "kind": "end"}, sort_keys=True, separators=(",", ":")))
    return lines


def _trial_files(identity: dict[str, Any], status: str, reason: str, passed: bool | None,
                 rng: random.Random) -> tuple[bytes, bytes, list[dict[str, Any]]]:
    output = json.dumps({"sku": "SKU-100", "qty": rng.randint(0, 40), "name": "USB-C cable"})
    if rng.random() < 0.125:
        output += " " + "stock log entry; " * 150  # past the view's collapse length
    messages = [
        {"role": "user", "content": "Hi, how many USB-C cables are in stock?"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {
            "name": "lookup_item", "arguments": "{\"sku\": \"SKU-100\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": output[:400]},
        {"role": "assistant", "content": "There are some USB-C cables in stock."},
        {"role": "user", "content": "Thanks, please reserve two."},
        {"role": "assistant", "content": "Done: two reserved."},
    ]
    trajectory = {
        "format": "capplan-trajectory", "version": 1, "trial": identity, "simulator_schema_version": 1,
        "system_prompt": "You run the inventory desk. Use the tools; never invent SKUs.",
        "tools": [{"type": "function", "function": {"name": "lookup_item", "description": "Look up one item by SKU.",
                                                     "parameters": {"type": "object", "properties": {
                                                         "sku": {"type": "string"}}, "required": ["sku"]}}}],
        "messages": messages,
        "tool_calls": [{"id": "call_1", "provider_id": "call_1", "name": "lookup_item", "arguments": {"sku": "SKU-100"},
                        "output": output, "prompt_chars": min(400, len(output)), "truncated": len(output) > 400,
                        "error": None, "turn": 0}],
        "retries": [], "summarize_events": [], "user_reply_guard_events": [], "value_substitutions": [],
        "parser_errors": [], "schema_violations": [], "final_state": {"reserved": 2},
        "termination": {"reason": reason, "status": status, "detail": "", "turns": 3, "max_turns": 8},
    }
    # every field of a call record, as the run writes them in both files
    calls = [CallRecord.model_validate(c).model_dump(mode="json") for c in (
        _call("agent", 0, 400, 12, "tool_calls"), _call("agent", 1, 520, 14, "stop"),
        _call("user", 1, 300, 10, "stop"), _call("agent", 2, 600, 8, "stop"))]
    metrics = {
        "format": "capplan-metrics", "version": 1, "trial": identity, "status": status, "termination_reason": reason,
        "counts_against_model": status != "aborted", "turns": 3, "max_turns": 8, "usage": _usage(1520, 34),
        "user_usage": _usage(300, 10), "cost_usd": 0.0009, "cost_source": "pricing", "user_cost_usd": 0.0003,
        "user_cost_source": "pricing", "n_calls": len(calls), "calls": calls, "latency_s": 1.7, "wait_s": 0.0,
        "openrouter_generation_ids": [c["openrouter_generation_id"] for c in calls], "wall_s": 1.9,
        "grade": {"passed": passed, "graders": [] if passed is None else [
            {"name": "expected_state", "passed": passed, "detail": None if passed else "reserved: expected 2, got 0"}],
                  "note": None},
        "lost_attempts": 0,
    }
    return dump_yaml(trajectory), dump_yaml(metrics), calls


def write_synthetic_run(root: Path, trials: int, *, seed: int = 0, models: int = len(MODELS),
                        trials_per_task: int = TRIALS_PER_TASK) -> Path:
    """A run folder of ``trials`` trials (rounded down to whole tasks) under ``root``; returns it.

    ``models`` of :data:`MODELS` run every task ``trials_per_task`` times.
    """
    rng = random.Random(seed)
    chosen = MODELS[:models]
    n_tasks = max(1, trials // (len(chosen) * trials_per_task))
    tasks = {f"task-{i:05d}": {"path": f"tasks/inventory/task-{i:05d}.yaml", "sha256": _sha(f"task {i}"),
                               "pack": "inventory" if i % 3 else "travel"} for i in range(n_tasks)}
    plans = {model: _sha(model) for model in chosen}
    root.mkdir(parents=True, exist_ok=True)
    manifest = RunManifest.model_validate({
        "run_id": hashlib.md5(str(seed).encode()).hexdigest(),  # noqa: S324 - an id, not a digest
        "started_at": "2026-01-01T00:00:00Z", "ended_at": "2026-01-01T01:00:00Z",
        "command": ["capplan", "trial", "run", "tasks/", "--trials", str(trials_per_task)],
        "plans": plans, "tasks": tasks,
        "settings": {"user_plan_fingerprint": None, "max_turns": None, "trials": trials_per_task,
                     "run_config_sha256": None, "module_files": {}, "installed_modules": {},
                     "capplan_version": "0.1.0", "litellm_version": None},
    })
    (root / "run.json").write_text(manifest.model_dump_json(indent=2))
    lines = []
    journal: list[str] = []
    for model in chosen:
        skill = 0.35 + 0.15 * MODELS.index(model)
        for task_id, task in tasks.items():
            for index in range(trials_per_task):
                draw = rng.random()
                status, reason, passed = (_OUTCOMES[0] if draw < skill else _OUTCOMES[1] if draw < 0.9
                                          else _OUTCOMES[2] if draw < 0.95 else _OUTCOMES[3] if draw < 0.98
                                          else _OUTCOMES[4])
                key = f"{model}/{task_id}/{index}"
                identity = {"key": key, "plan_key": model, "plan_fingerprint": plans[model],
                            "effective_preset": "default", "user_plan_fingerprint": None, "task_id": task_id,
                            "task_pack": task["pack"], "task_path": task["path"], "task_sha256": task["sha256"],
                            "index": index}
                folder = root / "trials" / model / task_id / str(index)
                folder.mkdir(parents=True)
                trajectory, metrics, calls = _trial_files(identity, status, reason, passed, rng)
                journal += _journal_lines(identity, calls, str(manifest.run_id))
                (folder / "trajectory.yaml").write_bytes(trajectory)
                (folder / "metrics.yaml").write_bytes(metrics)
                line = RunLine.model_validate({
                    "key": key, "attempt": 1, "plan_key": model, "plan_fingerprint": plans[model],
                    "effective_preset": "default", "task_id": task_id, "task_pack": task["pack"],
                    "task_sha256": task["sha256"], "index": index, "status": status, "termination_reason": reason,
                    "counts_against_model": status != "aborted", "passed": passed if status != "error" else False,
                    "cost_usd": 0.0009, "cost_source": "pricing", "user_cost_usd": 0.0003,
                    "user_cost_source": "pricing", "total_tokens": 1554, "user_total_tokens": 310, "n_calls": 4,
                    "retries": {}, "latency_s": 1.7, "turns": 3, "dir": f"trials/{key}", "run_id": manifest.run_id})
                lines.append(json.dumps(line.model_dump(mode="json"), sort_keys=True))
    (root / "runs.jsonl").write_text("\n".join(lines) + "\n")
    (root / "calls.jsonl").write_text("\n".join(journal) + "\n")
    return root


def measure(trials: int, workdir: Path, *, from_journal: bool = True, run: Path | None = None) -> dict[str, Any]:
    """Write the folder (unless ``run`` is given), then time reading it, building the page's data and rendering it.

    ``from_journal``: each trial's calls from ``calls.jsonl`` (what ``trial view`` does); False
    parses every ``metrics.yaml`` whole, as ``trial view`` did before.
    """
    from capplan.trials.report.run_data import load_runs
    from capplan.trials.report.view.page import render_page
    from capplan.trials.report.view.payload import build_payload

    run = run or write_synthetic_run(workdir / f"run-{trials}", trials)
    started = time.perf_counter()
    runs = load_runs([run])
    loaded = time.perf_counter()
    payload = build_payload(runs, generated_by="benchmark", from_journal=from_journal)
    built = time.perf_counter()
    html = render_page(payload, title="benchmark").encode("utf-8")
    rendered = time.perf_counter()
    return {"trials": float(sum(len(r.trials) for r in runs)), "bytes": float(len(html)), "html": html, "run": run,
            "read_s": loaded - started, "data_s": built - loaded, "render_s": rendered - built,
            "total_s": rendered - started}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--trials", type=int, action="append", help="trial count (repeatable; default 1000 and 10000)")
    args = parser.parse_args(argv)
    sizes = args.trials or [1000, 10000]
    with tempfile.TemporaryDirectory(prefix="capplan-view-bench-") as tmp:
        print(f"{'trials':>7} {'calls from':>13} {'HTML size':>10} {'read':>8} {'data':>8} {'render':>8} "
              f"{'total':>8}  (seconds)")
        for n in sizes:
            before = measure(n, Path(tmp), from_journal=False)
            after = measure(n, Path(tmp), from_journal=True, run=before["run"])
            for name, m in (("metrics.yaml", before), ("calls.jsonl", after)):
                print(f"{int(m['trials']):>7} {name:>13} {m['bytes'] / 2**20:>8.1f} MB {m['read_s']:>8.2f} "
                      f"{m['data_s']:>8.2f} {m['render_s']:>8.2f} {m['total_s']:>8.2f}")
            print(f"{'':>7} same page: {before['html'] == after['html']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
