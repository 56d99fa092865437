"""The two BFCL graders side by side: scripted agents run through ``capplan trial run``, per category.

Each category is imported once with ``--grader both`` (the built-in per-turn checks and BFCL's
own ``multi_turn_checker`` on every trial); each agent -- the ground truth, or one of the
deviations in :mod:`tests.trials.bfcl.scripted_agent` -- is a loopback server the run's agent
plan points at. A trial's two verdicts are read from its ``metrics.yaml``.

``python -m tests.trials.bfcl.agreement [--limit N] [--category C ...] [--agent A ...]`` prints the
agreement table (the full 200 entries per category by default). A trial agrees when the per-turn
graders, BFCL's checker and the trial's own verdict (``grade.passed``: both graders, and an end the
task accepts) say the same.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from capplan.trials.importers.bfcl.pack import CHECKER_REF, import_category
from capplan.trials.importers.bfcl.source import CATEGORIES
from tests.fake_provider import FakeProvider, on_body
from tests.trials.bfcl.scripted_agent import DEVIATIONS, ScriptedAgent, ScriptedTask, load_tasks, with_script
from tests.trials.helpers import openai_plan
from tests.cli_runner import invoke

GROUND_TRUTH = "ground_truth"
AGENTS = (GROUND_TRUTH, *DEVIATIONS)
#: the name the built-in per-turn grader records its result under
BUILTIN = "per_turn"


@dataclass(frozen=True)
class Verdict:
    task_id: str
    status: str
    builtin: bool | None
    bfcl: bool | None
    detail: str
    #: the trial's own verdict (both graders, and an end the task accepts)
    passed: bool | None = None
    termination: str = ""

    @property
    def agrees(self) -> bool:
        """The per-turn graders, BFCL's checker and the trial's verdict all say the same."""
        return self.builtin == self.bfcl == self.passed


def plan_file(folder: Path) -> Path:
    path = folder / "agent.json"
    path.write_bytes(openai_plan(key="bfcl-agent").to_bytes())
    return path


def scripted(category: str, agent: str, *, limit: int | None = None) -> list[ScriptedTask]:
    """The first ``limit`` entries of ``category`` that ``agent`` applies to, with its script."""
    tasks = with_script(load_tasks(category), None if agent == GROUND_TRUTH else agent)
    return tasks[:limit]


def run_agent(pack: Path, tasks: list[ScriptedTask], out: Path, plan: Path, *, concurrency: int = 8,
              trials: int = 1) -> list[Verdict]:
    """Run the scripted ``tasks`` (imported into ``pack``) through ``capplan trial run``; each trial's two verdicts."""
    if not tasks:
        return []
    files = [str(pack / f"{t.entry_id}.yaml") for t in tasks]
    responder = ScriptedAgent(tasks)
    with FakeProvider(on_body(responder)) as server:
        result = invoke("trial", "run", *files, "--plan", str(plan), "--out", str(out),
                        "--api-base", server.base, "--concurrency", str(concurrency),
                        "--trials", str(trials))
    assert not responder.unmatched, responder.unmatched[:3]
    assert result.exit_code == 0, result.output  # every trial finished (passed or not); none ended error
    verdicts = []
    for line in (out / "runs.jsonl").read_text().splitlines():
        record = json.loads(line)
        metrics = yaml.safe_load((out / record["dir"] / "metrics.yaml").read_text())
        graders = {g["name"]: g for g in (metrics.get("grade") or {}).get("graders") or []}
        builtin, bfcl = graders.get(BUILTIN), graders.get(CHECKER_REF)
        detail = "; ".join(str(g.get("detail")) for g in (builtin, bfcl) if g and not g["passed"])
        verdicts.append(Verdict(record["task_id"], record["status"], builtin["passed"] if builtin else None,
                                bfcl["passed"] if bfcl else None, detail[:300], (metrics.get("grade") or {}).get("passed"),
                                record["termination_reason"]))
    return sorted(verdicts, key=lambda v: v.task_id)


def table(rows: list[tuple[str, str, list[Verdict]]]) -> str:
    lines = ["| category | agent | trials | per-turn graders pass | BFCL checker passes | trials pass | agree |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for category, agent, verdicts in rows:
        agree = sum(1 for v in verdicts if v.agrees)
        lines.append(f"| {category} | {agent} | {len(verdicts)} | {sum(bool(v.builtin) for v in verdicts)} | "
                     f"{sum(bool(v.bfcl) for v in verdicts)} | {sum(bool(v.passed) for v in verdicts)} | "
                     f"{agree} / {len(verdicts)} |")
    return "\n".join(lines)


def agreement(categories: Sequence[str], agents: Sequence[str], work: Path, *, limit: int | None,
              concurrency: int = 8) -> list[tuple[str, str, list[Verdict]]]:
    os.environ.setdefault("OPENAI_API_KEY", "sk-bfcl-loopback-agent")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    plan = plan_file(work)
    rows = []
    for category in categories:
        pack = work / "tasks" / category
        import_category(category, pack, grader="both")
        for agent in agents:
            tasks = scripted(category, agent, limit=limit)
            rows.append((category, agent, run_agent(pack, tasks, work / "runs" / category / agent, plan,
                                                    concurrency=concurrency)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--category", action="append", choices=CATEGORIES)
    parser.add_argument("--agent", action="append", choices=AGENTS)
    parser.add_argument("--limit", type=int, default=None, help="At most N entries per category and agent.")
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = agreement(args.category or CATEGORIES, args.agent or AGENTS, Path(tmp), limit=args.limit,
                         concurrency=args.concurrency)
    print(table(rows))
    for category, agent, verdicts in rows:
        for v in verdicts:
            if not v.agrees:
                print(f"disagree: {category} {agent} {v.task_id} status={v.status} ({v.termination}) "
                      f"per_turn={v.builtin} bfcl={v.bfcl} trial={v.passed}: {v.detail}")


if __name__ == "__main__":
    main()
