"""Two real runs of one task pack, whose recorded texts are hostile, for the view and report tests.

The agent is scripted by a loopback OpenAI-compatible server (``tests.fake_provider``),
and the trials run through ``capplan.trials.run`` (real litellm, the real loop, the real run
folder writer). Run A's agent adds 2 to the counter on every task but the first; run B's only
on the first: the grader (``expected_state: {value: 2}``) passes A on 11 of 12 tasks and B on
1, a difference the exact McNemar test calls (p = 2·13/4096 ≈ 0.006).

Every text the trials record carries markup, a ``javascript:`` URL and ANSI escapes: the
scripted user's turns, the tool's output (longer than the view's collapse length), the agent's
reply and its tool-call arguments. The run folders' own names are hostile too.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import capplan.trials
from capplan.trials.api import RunResult
from tests.fake_provider import FakeProvider, agent_completion, on_body, tool_call
from tests.trials.helpers import openai_plan

#: markup that would run if it were ever parsed as HTML, a link scheme, and terminal escapes
HOSTILE = ('<script>window.__pwned="script"</script></textarea></script><img src=x onerror="window.__pwned=\'img\'">'
           '<a href="javascript:window.__pwned=\'link\'">click</a> \x1b[31mRED\x1b[0m \x1b]0;title\x07 <!-- x')
#: the tool output is longer than the view's collapse length (1 200 characters)
LONG_TAIL = "lorem ipsum " * 150
TASKS = [f"t{i:02d}" for i in range(12)]

ENV_SOURCE = f'''
HOSTILE = {HOSTILE!r}


class Desk:
    """A counter whose tool answers with hostile text."""

    def __init__(self) -> None:
        self.value = 0

    def add(self, amount: int, memo: str = "") -> str:
        self.value += amount
        return "added " + str(amount) + " " + HOSTILE + " " + {LONG_TAIL!r} + "END-OF-OUTPUT"
'''

TASK = """\
id: {task_id}
system_prompt: You keep the counter of task {task_id}.
environment: desk_env:Desk
tools:
  - name: add
    description: Add to the counter.
    parameters: {{type: object, properties: {{amount: {{type: integer}}, memo: {{type: string}}}}, required: [amount]}}
user:
  mode: scripted
  turns:
    - {hostile}
    - thanks
max_turns: 4
grader:
  expected_state: {{value: 2}}
"""


def write_pack(root: Path) -> Path:
    """The task pack ``desk``: one environment module, twelve task files."""
    pack = root / "desk"
    pack.mkdir(parents=True)
    (pack / "desk_env.py").write_text(ENV_SOURCE)
    for task_id in TASKS:
        (pack / f"{task_id}.yaml").write_text(TASK.format(task_id=task_id, hostile=json.dumps(HOSTILE)))
    return pack


def responder(passing: set[str]) -> Any:
    """Add 2 on the tasks in ``passing`` (1 elsewhere) after the user's first turn; answer hostile text after."""
    def answer(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        messages = body.get("messages", [])
        system = next((m.get("content") for m in messages if m.get("role") == "system"), "") or ""
        found = re.search(r"task (t\d\d)", str(system))
        task = found.group(1) if found else ""
        if messages and messages[-1].get("role") == "user" and not any(m.get("role") == "tool" for m in messages):
            amount = 2 if task in passing else 1
            return 200, agent_completion(None, [tool_call(f"call_{task}", "add", {"amount": amount, "memo": HOSTILE})])
        return 200, agent_completion("agent says " + HOSTILE)
    return answer


@dataclass(frozen=True)
class HostileRuns:
    root: Path
    a: RunResult
    b: RunResult

    @property
    def paths(self) -> list[Path]:
        return [self.a.out, self.b.out]


def build(root: Path, monkeypatch: pytest.MonkeyPatch) -> HostileRuns:
    """Run A and run B into folders with hostile names under ``root``."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-view-0123456789abcdef")
    pack = write_pack(root / "tasks")
    plans = {}
    for key in ("agent-a", "agent-b"):
        plans[key] = root / f"{key}.json"
        plans[key].write_bytes(openai_plan(key=key).to_bytes())
    results = {}
    for key, passing in (("agent-a", set(TASKS[1:])), ("agent-b", {TASKS[0]})):
        # a folder name is free text: markup, a pipe and an escape in it must be harmless too
        out = root / "runs" / f"{key} <b>|\x1b[2J run"
        with FakeProvider(on_body(responder(passing))) as server:
            results[key] = capplan.trials.run([pack], [plans[key]], out=out, api_base=server.base, concurrency=len(TASKS))
        assert results[key].complete, results[key]
    return HostileRuns(root=root, a=results["agent-a"], b=results["agent-b"])



def with_second_trials(run: Path, copy: Path, *, aborted: str) -> Path:
    """A copy of ``run`` with a second trial (index 1) of every task, the same as its first but for ``aborted``'s.

    The second trial of task ``aborted`` ended aborted (a rate limit): that task has one graded
    trial, every other task two. Trial folders are copied, runs.jsonl gets one line per new trial.
    """
    import shutil

    shutil.copytree(run, copy)
    lines = [json.loads(text) for text in (copy / "runs.jsonl").read_text().splitlines()]
    added = []
    for line in lines:
        second = {**line, "key": line["key"].removesuffix("/0") + "/1", "index": 1,
                  "dir": line["dir"].removesuffix("/0") + "/1"}
        if line["task_id"] == aborted:
            second.update(status="aborted", termination_reason="rate_limit", counts_against_model=False, passed=None)
        shutil.copytree(copy / line["dir"], copy / second["dir"])
        added.append(second)
    (copy / "runs.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines + added))
    return copy
