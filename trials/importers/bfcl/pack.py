"""Writing a BFCL multi-turn category as a pack of capplan task files.

One task file per benchmark entry:

- ``requires: [bfcl-eval]`` and ``environment``: one component per involved API class, referenced
  as the module of the installed bfcl-eval that defines it, with ``setup: _load_scenario`` and the entry's initial configuration (and
  ``long_context`` for that category), as the benchmark loads its instances;
- ``tools``: the classes' function docs converted as BFCL's OpenAI handler converts them; a
  function held out until a later turn (``miss_func``) has ``available_from_turn``;
- ``user``: the benchmark's question turns as a scripted user (at a turn that adds functions,
  the message the benchmark sends there);
- ``max_steps_per_turn``: the benchmark's step limit (tool-calling steps in one user turn; one
  more force-quits the entry), ``argument_validation: off`` (the benchmark runs what the
  model sends);
- ``metadata.bfcl``: the entry's id, category, involved classes and ground truth;
- ``grader``: ``per_turn`` expectations computed by replaying the ground truth on a fresh
  environment built from this very task file, through the same environment and state encoder
  a trial uses (so the expected state and tool outputs are exactly what a trial that makes
  the ground truth's calls records), and/or BFCL's own checker (``--grader bfcl``).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from capplan.trials.importers.bfcl import source
from capplan.trials.importers.bfcl.ground_truth import Call, parse_call
from capplan.trials.importers.bfcl.replay import replay_ground_truth
from capplan.trials.importers.bfcl.source import Benchmark, BfclDataError, BfclEntry
from capplan.trials.importers.bfcl.tool_schema import convert_tool

GraderChoice = Literal["builtin", "bfcl", "both"]
GRADER_CHOICES: tuple[GraderChoice, ...] = ("builtin", "bfcl", "both")
#: the grader function ``--grader bfcl`` names (BFCL's multi_turn_checker behind it)
CHECKER_REF = "capplan.trials.importers.bfcl.checker:bfcl_multi_turn_checker"
SETUP_METHOD = "_load_scenario"
#: the distribution whose modules the components name (each task file declares it under ``requires:``)
DISTRIBUTION = "bfcl-eval"

try:  # libyaml's emitter when PyYAML was built with it (as capplan's run folders are written)
    _Dumper: type[yaml.SafeDumper] = yaml.CSafeDumper
except AttributeError:  # pragma: no cover - a PyYAML without libyaml
    _Dumper = yaml.SafeDumper


@dataclass
class ImportResult:
    """What an import wrote."""

    category: str
    version: str
    written: list[Path] = field(default_factory=list)
    #: files already in the folder that this import did not write (kept as they are)
    kept: list[str] = field(default_factory=list)
    #: what a user should know about particular entries
    notes: list[str] = field(default_factory=list)


class OutFolderNotEmpty(BfclDataError):
    """``--out`` already holds files and ``--force`` was not given."""

    code = "OUT_NOT_EMPTY"


class OutFolderUnusable(BfclDataError):
    """``--out`` is a file, lies under a file, or cannot be read or created."""

    code = "OUT_UNUSABLE"


def _public_methods(cls: type) -> dict[str, Callable[..., Any]]:
    return {name: member for name, member in inspect.getmembers(cls, inspect.isfunction) if not name.startswith("_")}


def _scenario_parameter(cls: type, where: str) -> str:
    """The name of ``_load_scenario``'s first parameter (the classes name it differently)."""
    method = getattr(cls, SETUP_METHOD, None)
    if method is None:
        raise BfclDataError(f"class {cls.__name__} has no {SETUP_METHOD} method", location=where)
    names = [p for p in inspect.signature(method).parameters if p != "self"]
    if not names:
        raise BfclDataError(f"{cls.__name__}.{SETUP_METHOD} takes no scenario", location=where)
    return names[0]


def _user_turns(bench: Benchmark, entry: BfclEntry) -> list[str]:
    turns = []
    for index, messages in enumerate(entry.question):
        if not messages:
            if str(index) not in entry.missed_function:
                raise BfclDataError(f"entry {entry.id}: user turn {index} is empty but adds no function",
                                    location=entry.location)
            turns.append(bench.added_functions_prompt)
            continue
        if len(messages) != 1 or not isinstance(messages[0], dict) or messages[0].get("role") != "user":
            raise BfclDataError(f"entry {entry.id}: user turn {index} is not one user message", location=entry.location)
        turns.append(str(messages[0].get("content", "")))
    return turns


def task_document(bench: Benchmark, entry: BfclEntry, grader: GraderChoice) -> tuple[dict[str, Any], list[list[Call]]]:
    """The task file's content without its per-turn expectations, and the ground truth as tool calls."""
    long_context = "long_context" in entry.category
    held = held_out(entry)
    components: list[dict[str, Any]] = []
    tools: list[dict[str, Any]] = []
    methods: dict[str, Callable[..., Any]] = {}
    for class_name in entry.involved_classes:
        cls = bench.api_class(class_name)
        public = _public_methods(cls)
        component: dict[str, Any] = {"ref": f"{bench.class_modules[class_name]}:{class_name}", "name": class_name}
        if class_name not in bench.stateless:
            component["setup"] = {"method": SETUP_METHOD, "args": {
                _scenario_parameter(cls, entry.location): entry.initial_config.get(class_name, {}),
                "long_context": long_context}}
        declared = []
        places = bench.func_doc_locations.get(class_name, [])
        for index, doc in enumerate(bench.func_docs[class_name]):
            where = places[index] if index < len(places) else f"{class_name} function docs"
            tool = convert_tool(doc, bench.type_mapping, where=where)
            if tool["name"] in held:
                tool["available_from_turn"] = held[tool["name"]]
            tools.append(tool)
            declared.append(tool["name"])
        ignored = sorted(set(public) - set(declared))
        if ignored:
            component["ignore_methods"] = ignored
        components.append(component)
        methods.update(public)
    unknown = sorted(set(held) - {t["name"] for t in tools})
    if unknown:
        raise BfclDataError(f"entry {entry.id} holds out functions no involved class documents: {', '.join(unknown)}",
                            location=entry.location)

    def signature_of(name: str) -> inspect.Signature | None:
        method = methods.get(name)
        if method is None:
            return None
        signature = inspect.signature(method)
        return signature.replace(parameters=[p for p in signature.parameters.values() if p.name != "self"])

    calls = [[parse_call(text, signature_of, where=entry.location) for text in turn] for turn in entry.ground_truth]
    turns = _user_turns(bench, entry)
    if len(calls) != len(turns):
        raise BfclDataError(f"entry {entry.id} has {len(turns)} user turns but ground truth for {len(calls)}",
                            location=entry.location)
    document: dict[str, Any] = {
        "id": entry.id,
        "pack": entry.category,
        # BFCL's function-calling handlers send no system message: the conversation opens with the user
        "system_prompt": "",
        # the components are modules of bfcl-eval: a task names only installed code it declares
        "requires": [DISTRIBUTION],
        "environment": components,
        "tools": tools,
        "user": {"mode": "scripted", "turns": turns},
        # the step limit bounds every user turn (its tool-calling steps and one text answer); this
        # only keeps a plan's default turn budget from cutting in first
        "max_turns": len(turns) * (bench.step_limit + 1),
        # counted as BFCL counts: tool-calling completions of one user turn, force-quit once passed
        "max_steps_per_turn": bench.step_limit,
        "argument_validation": "off",
        "metadata": {"bfcl": {
            "id": entry.id, "category": entry.category, "version": bench.version,
            "involved_classes": list(entry.involved_classes), "ground_truth": entry.ground_truth,
            "missed_function": entry.missed_function}},
    }
    if grader in ("bfcl", "both"):
        document["grader"] = {"function": {"ref": CHECKER_REF, "args": {}}}
    return document, calls


def held_out(entry: BfclEntry) -> dict[str, int]:
    """Tool name -> the user turn from which it is offered, for the entry's held-out functions."""
    return {name: int(turn) for turn, names in entry.missed_function.items() for name in names}


def early_calls(entry: BfclEntry, calls: list[list[Call]], held: dict[str, int]) -> list[str]:
    """Ground-truth calls of a tool before the turn that offers it.

    BFCL's executor runs any method of the involved classes, so its ground truth can call a
    held-out function early (``multi_turn_miss_func_49`` calls ``tail`` at turn 1, offered from
    turn 3); a trial answers such a call as an unknown tool, so an agent replaying that ground
    truth fails the per-turn grader there while BFCL's checker passes it.
    """
    return [f"{entry.id}: the ground truth calls {call.name} at user turn {turn}, before user turn {held[call.name]} "
            "offers it; a trial answers that call as an unknown tool (docs/bfcl.md)"
            for turn, turn_calls in enumerate(calls) for call in turn_calls if held.get(call.name, 0) > turn]


def dump(document: dict[str, Any], header: str) -> str:
    body: str = yaml.dump(document, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=4096,
                     default_flow_style=False)
    return header + body


def import_category(category: str, out: Path, *, grader: GraderChoice = "builtin", force: bool = False,
                    limit: int | None = None, entry_ids: Collection[str] | None = None) -> ImportResult:
    """Write ``category`` as task files into ``out``; the folder must be new or empty unless ``force``.

    ``limit`` keeps the first N entries, ``entry_ids`` only the entries named.
    """
    existing = _existing(out)  # before the benchmark is loaded: a wrong --out is refused at once
    bench = source.load(category)
    if existing and not force:
        raise OutFolderNotEmpty(f"the output folder already holds {len(existing)} file(s)", location=str(out),
                                hint="choose a new or empty folder, or add --force to write over the task files there")
    from capplan.trials.run_folder.confined import write_atomic  # the one confined writer

    result = ImportResult(category=category, version=bench.version)
    entries = bench.entries if limit is None else bench.entries[:limit]
    if entry_ids is not None:
        unknown = sorted(set(entry_ids) - {e.id for e in bench.entries})
        if unknown:
            raise BfclDataError(f"{category} has no entry {unknown[0]!r}", hint=f"ids look like {category}_0")
        entries = [e for e in entries if e.id in entry_ids]
    header = (f"# BFCL {category} entry, written by `capplan trial import bfcl --category {category}` "
              f"from bfcl-eval {bench.version}\n")
    # every file is built (and its ground truth replayed) before the first is written: an entry
    # that cannot be imported leaves the folder as it was
    texts: dict[str, str] = {}
    for entry in entries:
        document, calls = task_document(bench, entry, grader)
        name = f"{entry.id}.yaml"
        if grader in ("builtin", "both"):
            per_turn = replay_ground_truth(dump(document, header), out / name, calls)
            # per_turn first, the custom grader (when --grader both) after it
            document["grader"] = {"per_turn": per_turn, **document.get("grader", {})}
        texts[name] = dump(document, header)
        result.notes += early_calls(entry, calls, held_out(entry))
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutFolderUnusable(f"cannot create the output folder: {exc.strerror or type(exc).__name__}",
                                location=str(out), hint=_OUT_HINT) from None
    for name, text in texts.items():
        write_atomic(out, [name], text.encode("utf-8"), mode=0o644)
        result.written.append(out / name)
    result.kept = sorted(n for n in existing if n not in texts)
    return result


#: how to fix an --out that cannot be used
_OUT_HINT = "give --out a folder you can write to (new, empty, or with --force one to write over)"


def _existing(out: Path) -> list[str]:
    """The names already in ``out`` (none when it does not exist yet); an unusable ``out`` is refused."""
    if not os.path.lexists(out):
        parent = out.absolute().parent
        while not os.path.lexists(parent):
            parent = parent.parent
        if not parent.is_dir():
            raise OutFolderUnusable(f"is a file, so the output folder {out} cannot be created inside it",
                                    location=str(parent), hint=_OUT_HINT)
        return []
    if not out.is_dir():
        raise OutFolderUnusable("the output path is a file, not a folder", location=str(out), hint=_OUT_HINT)
    try:
        return sorted(os.listdir(out))
    except OSError as exc:
        raise OutFolderUnusable(f"cannot read the output folder: {exc.strerror or type(exc).__name__}",
                                location=str(out), hint=_OUT_HINT) from None
