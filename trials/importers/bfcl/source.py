"""The installed ``bfcl-eval``: its multi-turn entries, ground truth, function docs and constants.

Everything is read from the installed package when an import runs (its data files, its type
mapping, its per-turn step limit, the prompt it sends when functions are added mid-conversation),
so a task pack follows the benchmark version it was imported from, which its metadata records.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capplan.core.errors import UserError

#: the multi-turn categories an import can write
CATEGORIES = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context")
#: the release this importer was written and tested against
TESTED_VERSION = "2026.3.23"
INSTALL_COMMAND = f"pip install --no-deps bfcl-eval=={TESTED_VERSION} mpmath==1.3.0"


class BfclNotInstalled(UserError):
    """bfcl-eval (or what its API classes import) is not installed in capplan's environment."""

    code = "BFCL_NOT_INSTALLED"


class BfclDataError(UserError):
    """The installed benchmark's data is not in the shape this importer reads."""

    code = "BFCL_DATA"


@dataclass(frozen=True)
class BfclEntry:
    """One multi-turn entry, with its ground truth."""

    id: str
    category: str
    #: per user turn, the benchmark's messages (an empty turn is where functions are added in miss_func)
    question: list[list[dict[str, Any]]]
    initial_config: dict[str, Any]
    involved_classes: list[str]
    #: user-turn index (as text, as the data has it) -> names of the functions held out until then
    missed_function: dict[str, list[str]]
    #: per user turn, the ground-truth calls as the benchmark writes them (``cd(folder='x')``)
    ground_truth: list[list[str]]
    #: where the entry sits in its data file (``file:line``), for errors about it
    location: str


@dataclass(frozen=True)
class Benchmark:
    """What an import needs from the installed benchmark."""

    version: str
    category: str
    entries: list[BfclEntry]
    #: class name -> its function docs, in the benchmark's order
    func_docs: dict[str, list[dict[str, Any]]]
    #: class name -> the module that defines it
    class_modules: dict[str, str]
    #: classes the benchmark never loads a scenario into
    stateless: frozenset[str]
    #: the benchmark's type names -> JSON Schema types, as its OpenAI handler maps them
    type_mapping: dict[str, str]
    #: tool-calling steps the benchmark allows in one user turn before it forces the turn to quit
    step_limit: int
    #: the user message the benchmark sends at a turn where held-out functions are added
    added_functions_prompt: str
    #: class name -> where each of its function docs sits (``file:line``), for errors about one
    func_doc_locations: dict[str, list[str]] = field(default_factory=dict)

    def api_class(self, name: str) -> type:
        """The benchmark's API class (imports its module)."""
        return getattr(_import(self.class_modules[name]), name)  # type: ignore[no-any-return]


def _import(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        missing = "the BFCL benchmark (bfcl-eval) is not installed" if (exc.name or "").startswith("bfcl_eval") \
            else f"the BFCL benchmark cannot be imported: module {exc.name!r} is missing"
        raise BfclNotInstalled(
            missing,
            hint=f"install it into capplan's environment: {INSTALL_COMMAND}") from None


def _read_jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    rows = []
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BfclDataError(f"cannot read the benchmark's data file: {exc.strerror}", location=str(path),
                            hint=f"reinstall the benchmark: {INSTALL_COMMAND}") from None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BfclDataError(f"not a JSON line: {exc.msg}", location=f"{path}:{number}:{exc.colno}",
                                hint=f"reinstall the benchmark: {INSTALL_COMMAND}") from None
        if not isinstance(row, dict):
            raise BfclDataError("a data line is not a JSON object", location=f"{path}:{number}")
        rows.append((number, row))
    return rows


def _field(row: dict[str, Any], key: str, kind: type, where: str) -> Any:
    value = row.get(key)
    if not isinstance(value, kind):
        raise BfclDataError(f"entry field {key!r} is missing or not a {kind.__name__}", location=where,
                            hint=f"this importer reads bfcl-eval {TESTED_VERSION}: {INSTALL_COMMAND}")
    return value


def load(category: str) -> Benchmark:
    """The installed benchmark's entries of ``category`` and the constants an import uses."""
    if category not in CATEGORIES:
        raise BfclDataError(f"unknown BFCL category {category!r}", hint="one of: " + ", ".join(CATEGORIES))
    backend = _import("bfcl_eval.constants.executable_backend_config")
    try:
        version = importlib.metadata.version("bfcl-eval")
    except importlib.metadata.PackageNotFoundError:  # importable, but not installed as a distribution
        version = "unknown"
    paths = _import("bfcl_eval.constants.eval_config")
    prefix = _import("bfcl_eval.constants.category_mapping").VERSION_PREFIX
    prompts = _import("bfcl_eval.constants.default_prompts")
    types = _import("bfcl_eval.constants.type_mappings")

    data_file = Path(paths.PROMPT_PATH) / f"{prefix}_{category}.json"
    answer_file = Path(paths.POSSIBLE_ANSWER_PATH) / f"{prefix}_{category}.json"
    answers = {}
    for number, row in _read_jsonl(answer_file):
        where = f"{answer_file}:{number}"
        answers[_field(row, "id", str, where)] = _field(row, "ground_truth", list, where)
    entries = []
    for number, row in _read_jsonl(data_file):
        where = f"{data_file}:{number}"
        entry_id = _field(row, "id", str, where)
        if entry_id not in answers:
            raise BfclDataError(f"entry {entry_id!r} has no ground truth in {answer_file.name}", location=where)
        entries.append(BfclEntry(
            id=entry_id, category=category, question=_field(row, "question", list, where),
            initial_config=row.get("initial_config") or {},
            involved_classes=_field(row, "involved_classes", list, where),
            missed_function=row.get("missed_function") or {}, ground_truth=answers[entry_id], location=where))

    func_docs: dict[str, list[dict[str, Any]]] = {}
    doc_locations: dict[str, list[str]] = {}
    doc_folder = Path(paths.MULTI_TURN_FUNC_DOC_PATH)
    for class_name in sorted({c for e in entries for c in e.involved_classes}):
        doc_name = backend.MULTI_TURN_FUNC_DOC_FILE_MAPPING.get(class_name)
        if doc_name is None or class_name not in backend.CLASS_FILE_PATH_MAPPING:
            raise BfclDataError(f"class {class_name!r} has no function docs or module in the benchmark")
        rows = _read_jsonl(doc_folder / doc_name)
        func_docs[class_name] = [row for _, row in rows]
        doc_locations[class_name] = [f"{doc_folder / doc_name}:{number}" for number, _ in rows]
    return Benchmark(
        version=version, category=category, entries=entries, func_docs=func_docs,
        class_modules={c: backend.CLASS_FILE_PATH_MAPPING[c] for c in func_docs},
        stateless=frozenset(backend.STATELESS_CLASSES), type_mapping=dict(types.GORILLA_TO_OPENAPI),
        step_limit=int(prompts.MAXIMUM_STEP_LIMIT),
        added_functions_prompt=str(prompts.DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC),
        func_doc_locations=doc_locations)
