"""Shared builders for trial tests: plans, task files, specs."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from capplan.executor.plan import Plan
from tests.executor.plans import make_plan
from capplan.trials.run_folder.folder import RunFolder
from capplan.trials.spec import TrialSpec

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "trials"

ENV_SOURCE = '''
class Counter:
    """A tiny environment: a counter, a note, and a tool that fails."""

    def __init__(self, start: int = 0) -> None:
        self.value = start
        self.notes = []

    def add(self, amount: int) -> dict:
        self.value += amount
        return {"value": self.value}

    def note(self, text: str) -> str:
        self.notes.append(text)
        return "noted " + text

    def explode(self) -> str:
        raise RuntimeError("the fuse blew")
'''

TOOLS = """\
tools:
  - name: add
    description: Add to the counter.
    parameters: {type: object, properties: {amount: {type: integer}}, required: [amount]}
  - name: note
    description: Write a note.
    parameters: {type: object, properties: {text: {type: string}}, required: [text]}
    output_max_chars: 40
  - name: explode
    description: Always fails.
    parameters: {type: object, properties: {}}
"""


def write_task(folder: Path, *, task_id: str = "count", env_module: str = "counter_env", turns: list[str] | None = None,
               extra: str = "", user: str | None = None) -> Path:
    """A task file plus its environment module in ``folder``; returns the task path."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{env_module}.py").write_text(ENV_SOURCE)
    user_block = user or "user:\n  mode: scripted\n  turns:\n" + "".join(
        f"    - {t!r}\n" for t in (turns or ["please add 2", "thanks"]))
    text = f"id: {task_id}\nsystem_prompt: You keep a counter.\nenvironment: {env_module}:Counter\n{TOOLS}{user_block}{extra}"
    path = folder / f"{task_id}.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def plan_text(plan: Plan) -> str:
    return plan.to_bytes().decode("utf-8")


def spec_for(task: Path, plan: Plan, *, index: int = 0, api_base: str | None = None, user_plan: Plan | None = None,
             max_turns_cap: int | None = None, task_id: str | None = None) -> TrialSpec:
    return TrialSpec(
        plan_json=plan_text(plan), plan_fingerprint=plan.fingerprint, plan_key=plan.model.key,
        task_path=str(task.resolve()), task_text=task.read_text(), task_id=task_id or task.stem, task_pack=task.parent.name,
        index=index, user_plan_json=plan_text(user_plan) if user_plan else None,
        user_plan_fingerprint=user_plan.fingerprint if user_plan else None, max_turns_cap=max_turns_cap,
        api_base=api_base, user_api_base=api_base,
    )


def openai_plan(*, loop: dict[str, Any] | None = None, key: str = "agent", pricing: dict[str, Any] | None = None,
                max_tokens: int | None = None) -> Plan:
    """A sealed openai-route plan with the given loop knobs (the test server speaks OpenAI).

    ``max_tokens``: the plan's default output cap (a priced plan with one is what ``--max-cost`` can bound).
    """
    plan = make_plan("openai", "agent-model", key=key, pricing=pricing)
    if not loop and max_tokens is None:
        return plan
    body = plan.body()
    if loop:
        body["loop"] = {**body["loop"], **loop}
    if max_tokens is not None:
        body["request_defaults"] = {**body["request_defaults"], "max_tokens": max_tokens}
    return Plan.seal(body)


def mock_plan(key: str = "mock-agent") -> Plan:
    return make_plan("mock", "echo-1", key=key)


def opened_run_folder(tmp_path: Path, *, trials: int) -> tuple[RunFolder, list[TrialSpec]]:
    """A run folder opened for ``trials`` trials of the counter task on the mock plan (its journal ready)."""
    task = write_task(tmp_path / "pack")
    specs = [spec_for(task, mock_plan(), index=i) for i in range(trials)]
    folder = RunFolder(tmp_path / "run")
    folder.open(specs)
    return folder, specs
