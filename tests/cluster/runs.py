"""Builders for cluster tests: a task pack on disk, a plan whose key is the canary, run-folder comparison."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from capplan.executor.plan import Plan
from tests.cluster.conftest import CANARY_ENV
from tests.executor.plans import make_plan

ENVIRONMENT = '''
class Counter:
    """A counter the agent adds to; its value is the final state the grader reads."""

    def __init__(self, start: int = 0) -> None:
        self.value = start

    def add(self, amount: int) -> dict:
        self.value += amount
        return {"value": self.value}
'''

TASK = """\
id: {task_id}
system_prompt: You keep a counter.
environment: cluster_counter_env:Counter
environment_args: {{start: {start}}}
tools:
  - name: add
    description: Add to the counter.
    parameters: {{type: object, properties: {{amount: {{type: integer}}}}, required: [amount]}}
user:
  mode: scripted
  turns: {turns}
grader:
  expected_state: {{value: {expected}}}
"""


def write_pack(folder: Path, n_tasks: int = 2, user_turns: int = 2) -> list[Path]:
    """``n_tasks`` tasks of ``2 * user_turns`` agent turns each (a tool call, then text, per user turn)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cluster_counter_env.py").write_text(ENVIRONMENT)
    paths = []
    for i in range(n_tasks):
        turns = json.dumps([f"please add two ({j + 1})" for j in range(user_turns)])
        path = folder / f"count-{i}.yaml"
        path.write_text(TASK.format(task_id=f"count-{i}", start=i, turns=turns, expected=i + 2 * user_turns))
        paths.append(path)
    return paths


def canary_plan(key: str = "agent") -> Plan:
    """An OpenAI-route plan whose binding pins its key from the canary variable into every call."""
    body = make_plan("openai", "agent-model", key=key,
                     pricing={"key": "openai/agent-model", "input": 1.0, "output": 2.0}).body()
    body["binding"] = {"key": "openai", "binding": {"api_key_env": CANARY_ENV, "kwargs_pin_transport": True,
                                                    "custom_llm_provider": "openai"}}
    return Plan.seal(body)


_TIMING = {"latency_s", "wall_s", "latency_p50_s", "latency_p95_s"}
#: what differs between any two runs of one experiment: the run's own id and its clock
_RUN_STAMPS = _TIMING | {"run_id", "started_at", "ended_at"}


def _without_timings(data: Any, drop: frozenset[str] | set[str] = _TIMING) -> Any:
    if isinstance(data, dict):
        return {k: _without_timings(v, drop) for k, v in data.items() if k not in drop}
    if isinstance(data, list):
        return [_without_timings(v, drop) for v in data]
    return data


def folder_contents(root: Path) -> dict[str, Any]:
    """Every file of a run folder, parsed, with timings removed and runs.jsonl as a set of lines."""
    out: dict[str, Any] = {}
    for path in sorted(root.rglob("*")):
        if not path.is_file():
            continue
        rel = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        if rel == "runs.jsonl":
            out[rel] = sorted(json.dumps(_without_timings(json.loads(line), _RUN_STAMPS), sort_keys=True)
                              for line in text.splitlines())
        elif rel == "calls.jsonl":
            # completion order, execution and request ids differ between backends: compared as a multiset without them
            drop = _RUN_STAMPS | {"execution", "at", "request_id"}
            out[rel] = sorted(json.dumps(_without_timings(json.loads(line), drop), sort_keys=True)
                              for line in text.splitlines())
        elif rel == "run.json":
            out[rel] = _without_timings(json.loads(text), _RUN_STAMPS)
        elif rel == "summary.json":
            out[rel] = _without_timings(json.loads(text))
        elif path.suffix == ".yaml":
            out[rel] = _without_timings(yaml.safe_load(text))
        elif rel == "summary.md":
            # the latency column (p50 / p95) is a timing too
            out[rel] = re.sub(r"\d+\.\d+ / \d+\.\d+ \|", "<s> |", re.sub(r"\d+\.\d+ ?s\b", "<s>", text))
        else:
            out[rel] = text
    return out
