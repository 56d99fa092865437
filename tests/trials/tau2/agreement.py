"""capplan's reward beside τ²'s own, task by task, for the gold script and each deliberate deviation.

Each domain is imported with ``capplan trial import tau2`` (in-process); each round of trials is
one loopback server that is both the scripted agent and the scripted user
(:mod:`tests.trials.tau2.scripted`). capplan's trial driver plays the round's tasks against it
(what ``capplan trial run`` does), graded by the pack's evaluator; τ²'s own orchestrator,
``LLMAgent`` and ``UserSimulator`` play the same tasks (τ²'s own task, message history and all)
against the same server, graded by ``evaluate_simulation`` as ``tau2 run`` grades them. A trial agrees when the two rewards are
equal, or when both evaluators raised the same error.

Which tasks play which deviation: every task plays the gold script; with ``spread`` (the test's
choice) each task also plays one deviation, taken in turn from the task's position so that
every kind lands on many tasks; without it every deviation that applies to the task.

``python -m tests.trials.tau2.agreement [--domain D ...] [--every-deviation] [--limit N]`` prints
the agreement table (docs/tau2.md shows it) and every disagreement.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from capplan.trials.importers.tau2 import source
from capplan.trials.importers.tau2.pack import EVALUATOR_REF, import_domain, task_id
from tests.fake_provider import FakeProvider, on_body
from tests.trials.helpers import openai_plan
from tests.trials.tau2.scripted import DEVIATIONS, GOLD, KIND_TEXT, KINDS, Script, Scripted, Writes, case, script, \
    tau2_reward

#: the domains every task of which is played (telecom needs dual control, which the import refuses yet)
DOMAINS = ("mock", "airline", "retail")


@dataclass(frozen=True)
class Outcome:
    domain: str
    task: str
    kind: str
    #: capplan's reward, or ``raised: ...`` where the grader raised
    ours: float | str
    theirs: float | str
    ours_end: str
    theirs_end: str

    @property
    def agrees(self) -> bool:
        return self.ours == self.theirs


def original_tasks(domain: str) -> dict[str, Any]:
    """τ²'s tasks of ``domain`` as its own runner reads them (a message history left in place)."""
    module = source.import_module(f"tau2.domains.{domain}.environment")
    return {str(t.id): t for t in module.get_tasks(None)}


@dataclass(frozen=True)
class Trial:
    """One task played with one script kind, by capplan and by τ²."""

    domain: str
    task: Any
    #: τ²'s own task (a history task keeps its message history)
    original: Any
    kind: str
    ours: Script
    theirs: Script


def trials(domain: str, tasks: Sequence[Any], originals: dict[str, Any], writes: frozenset[str], *,
           spread: bool, positions: Mapping[str, int] | None = None) -> list[Trial]:
    """Every task's gold trial, and its deviations: one each, in turn (``spread``), or every one that applies.

    Whose turn it is follows the task's place in its domain (``positions``: τ² id -> place, the list's
    own order by default), so a task played alone or in a sample plays what it plays among all of them.
    """
    played: list[Trial] = []
    for place, task in enumerate(tasks):
        position = (positions or {}).get(str(task.id), place)
        original = originals[str(task.id)]
        turn = [DEVIATIONS[(position + k) % len(DEVIATIONS)] for k in range(len(DEVIATIONS))]
        kinds = [GOLD] + [k for k in turn if script(task, k, domain=domain, writes=writes) is not None]
        for kind in kinds[:2] if spread else kinds:
            ours = script(task, kind, domain=domain, writes=writes)
            theirs = script(original, kind, domain=domain, writes=writes)
            assert ours is not None and theirs is not None
            played.append(Trial(domain, task, original, kind, ours, theirs))
    return played


def rounds(played: Sequence[Trial]) -> list[list[Trial]]:
    """``played`` in as few rounds as can be told apart: no two trials of a round share a scenario.

    The scripted agent and user know a trial only by its user scenario (some tasks share one:
    mock's ``create_task_1`` and ``create_task_1_with_env_assertions``), so each round is one server.
    """
    made: list[tuple[set[str], list[Trial]]] = []
    for trial in played:
        cases = {case(trial.task), case(trial.original)}
        for used, members in made:
            if not used & cases:
                used |= cases
                members.append(trial)
                break
        else:
            made.append((set(cases), [trial]))
    return [members for _, members in made]


def play(members: list[Trial], packs: Path, plan: Path, out: Path, *, settings: Any = None,
         concurrency: int = 8) -> tuple[list[Outcome], Any]:
    """One round through capplan's trial driver and through τ²'s pipeline; an outcome per trial.

    capplan's side is what ``capplan trial run`` does (the driver, the local backend, the run
    folder), called in-process. The run's identity (``settings``: the task modules and installed
    distributions) is the same for every round, so it is worked out once and handed on: finding a
    module's distribution reads every installed distribution's file list.
    """
    from capplan.trials.backends.local import LocalBackend
    from capplan.trials.driver import RunRequest, build_run, build_specs, drive
    from capplan.trials.report.progress import Progress
    from capplan.trials.run_folder.folder import RunFolder
    from capplan.trials.runner import RunContext

    scripts = {case(t.task): t.ours for t in members} | {case(t.original): t.theirs for t in members}
    responder = Scripted(scripts)
    files = [packs / t.domain / f"{task_id(t.domain, str(t.task.id))}.yaml" for t in members]
    with FakeProvider(on_body(responder)) as server:
        request = RunRequest(tasks=files, plans=[plan], out=out, user_plan=plan, api_base=server.base,
                             user_api_base=server.base, concurrency=concurrency)
        if settings is None:
            specs, settings = build_run(request)
        else:
            specs = build_specs(request)
        progress = io.StringIO()
        done = drive(specs, RunFolder(out), LocalBackend(RunContext()), concurrency=concurrency, max_cost=None,
                     progress=Progress(progress), settings=settings)
        theirs = {task_id(t.domain, str(t.task.id)): tau2_reward(t.domain, t.original, server.base) for t in members}
    assert done.finished == len(members) and not done.interrupted, progress.getvalue()
    assert not responder.unmatched, responder.unmatched[:3]
    by_id = {task_id(t.domain, str(t.task.id)): t for t in members}
    outcomes = []
    for line in (out / "runs.jsonl").read_text().splitlines():
        record = json.loads(line)
        folder = out / record["dir"]
        grade = (yaml.safe_load((folder / "metrics.yaml").read_text()) or {}).get("grade") or {}
        scores = [g["score"] for g in grade.get("graders") or [] if g["name"] == EVALUATOR_REF]
        if scores:
            ours: float | str = float(scores[0])
        else:  # the grader raised: the trial's end says what
            detail = yaml.safe_load((folder / "trajectory.yaml").read_text())["termination"]["detail"]
            ours = "raised: " + str(detail).split(" raised ", 1)[-1]
        reward, end = theirs[record["task_id"]]
        trial = by_id[record["task_id"]]
        outcomes.append(Outcome(trial.domain, record["task_id"], trial.kind, ours, reward,
                                record["termination_reason"], end))
    assert len(outcomes) == len(members), progress.getvalue()
    return outcomes, settings


def agreement(domains: Sequence[str], work: Path, *, spread: bool = True, limit: int | None = None,
              task_ids: Mapping[str, Sequence[str]] | None = None, concurrency: int = 8) -> list[Outcome]:
    """Every task of ``domains`` (the first ``limit`` of each, or those ``task_ids`` names) played by capplan and τ²."""
    os.environ.setdefault("OPENAI_API_KEY", "sk-tau2-scripted-agent-key")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.pop("LLM_PROXY_BASE_URL", None)
    work.mkdir(parents=True, exist_ok=True)
    plan = work / "plan.json"
    plan.write_bytes(openai_plan(key="tau2-agent").to_bytes())
    played: list[Trial] = []
    for domain in domains:
        every = source.load(domain).tasks
        tasks = every[:limit]
        if task_ids is not None and domain in task_ids:
            tasks = [t for t in tasks if str(t.id) in set(task_ids[domain])]
        # a domain's turn of deviations starts at a place of its own: a domain played alone plays the same
        positions = {str(t.id): place + 2 * DOMAINS.index(domain) for place, t in enumerate(every)}
        import_domain(domain, work / "tasks" / domain, task_ids=[str(t.id) for t in tasks])
        played += trials(domain, tasks, original_tasks(domain), Writes(domain).names, spread=spread,
                         positions=positions)
    outcomes: list[Outcome] = []
    settings = None
    for number, members in enumerate(rounds(played)):
        found, settings = play(members, work / "tasks", plan, work / "runs" / str(number), settings=settings,
                               concurrency=concurrency)
        outcomes += found
    return sorted(outcomes, key=lambda o: (DOMAINS.index(o.domain), o.task, KINDS.index(o.kind)))


def _ones(values: list[float | str]) -> str:
    ones = sum(1 for v in values if v == 1.0)
    raised = sum(1 for v in values if isinstance(v, str))
    return f"{ones}" + (f" (+{raised} raised)" if raised else "")


def table(outcomes: Sequence[Outcome]) -> str:
    """The agreement table: per domain and script kind, the tasks played, rewards of 1 on each side, agreement."""
    lines = ["| domain | agent and user | tasks | capplan: reward 1 | τ²: reward 1 | agree |",
             "|---|---|---:|---:|---:|---:|"]
    for domain in dict.fromkeys(o.domain for o in outcomes):
        for kind in KINDS:
            rows = [o for o in outcomes if o.domain == domain and o.kind == kind]
            if rows:
                agree = sum(1 for o in rows if o.agrees)
                lines.append(f"| {domain} | {KIND_TEXT[kind]} | {len(rows)} | {_ones([o.ours for o in rows])} | "
                             f"{_ones([o.theirs for o in rows])} | {agree} / {len(rows)} |")
    total = sum(1 for o in outcomes if o.agrees)
    lines.append(f"| all | | {len(outcomes)} | {_ones([o.ours for o in outcomes])} | "
                 f"{_ones([o.theirs for o in outcomes])} | {total} / {len(outcomes)} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--domain", action="append", choices=DOMAINS, help="A domain to play (repeatable; default all).")
    parser.add_argument("--every-deviation", action="store_true",
                        help="Play every deviation that applies to each task (default: one per task, in turn).")
    parser.add_argument("--limit", type=int, default=None, help="At most N tasks per domain.")
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args(argv)
    started, cpu = time.perf_counter(), time.process_time()
    with tempfile.TemporaryDirectory() as tmp:
        outcomes = agreement(args.domain or DOMAINS, Path(tmp), spread=not args.every_deviation, limit=args.limit,
                             concurrency=args.concurrency)
    print(table(outcomes))
    print(f"\n{len(outcomes)} trials on each side in {time.perf_counter() - started:.0f} s wall, "
          f"{time.process_time() - cpu:.0f} s CPU")
    disagreements = [o for o in outcomes if not o.agrees]
    for o in disagreements:
        print(f"disagree: {o.domain} {o.kind} {o.task}: capplan {o.ours!r} ({o.ours_end}), "
              f"τ² {o.theirs!r} ({o.theirs_end})")
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
