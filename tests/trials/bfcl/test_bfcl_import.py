"""``capplan trial import bfcl``: tools as BFCL's OpenAI handler converts them, the ground truth
parsed without eval, the task files written (and refused) as documented, and the clear error when
the benchmark is not installed."""

from __future__ import annotations

import ast
import copy
import inspect
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from capplan.trials.importers.bfcl import source
from capplan.trials.importers.bfcl.ground_truth import model_call_text, parse_call
from capplan.trials.importers.bfcl.source import BfclDataError
from capplan.trials.importers.bfcl.tool_schema import convert_tool
from tests.cli_runner import invoke

pytest.importorskip("bfcl_eval", reason="bfcl-eval is not installed: pip install --no-deps bfcl-eval==2026.3.23 "
                                        "mpmath==1.3.0 (.ci/run installs it)")


def _bfcl_convert_to_tool() -> Any:
    """BFCL's own ``convert_to_tool``, run from its installed source.

    Its module also imports the parsers of other categories (tree-sitter and more), which a
    ``--no-deps`` install lacks; so the two functions the OpenAI handler uses are taken from
    that module's source and run in a namespace holding what they use.
    """
    import bfcl_eval
    from bfcl_eval.constants.enums import ModelStyle
    from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI

    path = Path(bfcl_eval.__file__).parent / "model_handler" / "utils.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    wanted = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in ("_cast_to_openai_type", "convert_to_tool")]
    assert len(wanted) == 2
    namespace: dict[str, Any] = {"copy": copy, "re": re, "json": json, "ModelStyle": ModelStyle,
                                 "GORILLA_TO_OPENAPI": GORILLA_TO_OPENAPI}
    exec(compile(ast.Module(body=wanted, type_ignores=[]), str(path), "exec"), namespace)  # noqa: S102
    return namespace["convert_to_tool"], ModelStyle.OPENAI_COMPLETIONS


def test_every_tool_is_converted_as_bfcls_openai_handler_converts_it() -> None:
    convert_to_tool, openai_style = _bfcl_convert_to_tool()
    bench = source.load("multi_turn_base")
    compared = 0
    for class_name, docs in bench.func_docs.items():
        theirs = convert_to_tool(docs, bench.type_mapping, openai_style)
        for doc, wire in zip(docs, theirs, strict=True):
            expected = dict(wire["function"])
            expected.pop("response", None)  # the one field a capplan tool has no place for (docs/bfcl.md)
            assert convert_tool(doc, bench.type_mapping, where=class_name) == expected, (class_name, doc["name"])
            compared += 1
    assert compared == sum(len(d) for d in bench.func_docs.values()) > 100


def test_float_tuple_dict_and_any_map_to_json_schema_types() -> None:
    mapping = source.load("multi_turn_base").type_mapping
    doc = {"name": "ns.f", "description": "d", "parameters": {"type": "dict", "properties": {
        "x": {"type": "float", "description": "X."}, "t": {"type": "tuple", "items": {"type": "float"}},
        "o": {"type": "dict", "properties": {"a": {"type": "any"}}}, "u": {"description": "no type"}}}}
    tool = convert_tool(doc, mapping, where="test")
    props = tool["parameters"]["properties"]
    assert tool["name"] == "ns_f" and tool["parameters"]["type"] == "object"
    assert props["x"] == {"type": "number", "format": "float", "description": "X. This is a float type value."}
    assert props["t"] == {"type": "array", "items": {"type": "number"}}
    assert props["o"] == {"type": "object", "properties": {"a": {"type": "string"}}}
    assert props["u"]["type"] == "string"
    with pytest.raises(BfclDataError, match="not in the benchmark's type table"):
        convert_tool({"name": "g", "parameters": {"type": "dict", "properties": {
            "l": {"type": "array", "items": {"type": "quaternion"}}}}}, mapping, where="test")


def _sig(name: str) -> inspect.Signature | None:
    def sort(file_name: str) -> None: ...

    def mv(source: str, destination: str) -> None: ...

    return {"sort": inspect.signature(sort), "mv": inspect.signature(mv)}.get(name)


def test_ground_truth_calls_are_parsed_not_evaluated() -> None:
    assert parse_call("sort('final_report.pdf')", _sig, where="w").arguments == {"file_name": "final_report.pdf"}
    call = parse_call("mv(source=('a', 1), destination={'k': [True, None, -2.5]})", _sig, where="w")
    # through JSON, as a model's arguments arrive: the tuple is a list
    assert call.arguments == {"source": ["a", 1], "destination": {"k": [True, None, -2.5]}}
    for bad, message in [("mv(source=__import__('os').getcwd())", "not a literal"),
                         ("rm(x=1)", "no involved class has"), ("os.system('x')", "by name"),
                         ("sort('a', 'b')", "more positional"), ("sort(", "not a Python call")]:
        with pytest.raises(BfclDataError, match=message):
            parse_call(bad, _sig, where="w")
    assert model_call_text("mv", {"source": "a", "n": 2, "f": True}) == "mv(source='a',n=2,f=True)"


def test_the_import_writes_one_task_per_entry_and_refuses_a_non_empty_folder(tmp_path: Path) -> None:
    out = tmp_path / "bfcl"
    result = invoke("trial", "import", "bfcl", "--category", "multi_turn_miss_func",
                    "--out", str(out), "--limit", "3")
    assert result.exit_code == 0, result.output
    assert "wrote 3 task file(s)" in result.output and "next: capplan trial run" in result.output
    files = sorted(out.glob("*.yaml"))
    assert [f.name for f in files] == ["multi_turn_miss_func_0.yaml", "multi_turn_miss_func_1.yaml",
                                       "multi_turn_miss_func_2.yaml"]
    task = yaml.safe_load(files[0].read_text())
    bench = source.load("multi_turn_miss_func")
    entry = bench.entries[0]
    assert [c["name"] for c in task["environment"]] == entry.involved_classes
    assert task["requires"] == ["bfcl-eval"]  # its refs are modules of bfcl-eval: the task declares it
    first = task["environment"][0]
    assert first["ref"] == f"{bench.class_modules[first['name']]}:{first['name']}"
    assert first["setup"]["method"] == "_load_scenario" and first["setup"]["args"]["long_context"] is False
    assert task["argument_validation"] == "off" and task["max_steps_per_turn"] == bench.step_limit == 20
    held = {t["name"]: t["available_from_turn"] for t in task["tools"] if "available_from_turn" in t}
    assert held == {name: int(turn) for turn, names in entry.missed_function.items() for name in names}
    [(turn, _)] = entry.missed_function.items()
    assert task["user"]["turns"][int(turn)] == bench.added_functions_prompt
    assert task["metadata"]["bfcl"]["ground_truth"] == entry.ground_truth
    per_turn = task["grader"]["per_turn"]
    assert len(per_turn) == len(entry.ground_truth)
    for expectation, truth in zip(per_turn, entry.ground_truth, strict=True):
        assert (expectation["expected_state"] is None) == (not truth)
        assert expectation["expected_outputs"] is None if not truth else len(expectation["expected_outputs"]) == len(truth)

    again = invoke("trial", "import", "bfcl", "--category", "multi_turn_base", "--out", str(out))
    assert again.exit_code == 2
    assert "error[OUT_NOT_EMPTY]" in again.output and "--force" in again.output
    assert sorted(out.glob("*.yaml")) == files  # nothing written

    forced = invoke("trial", "import", "bfcl", "--category", "multi_turn_base", "--out", str(out),
                    "--limit", "1", "--force", "--grader", "bfcl")
    assert forced.exit_code == 0, forced.output
    assert "3 other file(s)" in forced.output
    grader = yaml.safe_load((out / "multi_turn_base_0.yaml").read_text())["grader"]
    assert grader == {"function": {"ref": "capplan.trials.importers.bfcl.checker:bfcl_multi_turn_checker", "args": {}}}


def test_a_ground_truth_call_of_a_tool_before_its_turn_is_named(tmp_path: Path) -> None:
    from capplan.trials.importers.bfcl.pack import import_category

    result = import_category("multi_turn_miss_func", tmp_path / "out", entry_ids={"multi_turn_miss_func_49",
                                                                                  "multi_turn_miss_func_0"})
    assert result.notes == ["multi_turn_miss_func_49: the ground truth calls tail at user turn 1, before user turn 3 "
                            "offers it; a trial answers that call as an unknown tool (docs/bfcl.md)"]


@pytest.mark.parametrize(("out", "place", "message"), [
    ("notes.txt", "notes.txt", "the output path is a file, not a folder"),
    ("notes.txt/bfcl", "notes.txt", "is a file, so the output folder"),
])
def test_an_out_onto_or_under_a_file_is_a_located_error(tmp_path: Path, out: str, place: str, message: str) -> None:
    (tmp_path / "notes.txt").write_text("mine\n")
    result = invoke("trial", "import", "bfcl", "--category", "multi_turn_base",
                    "--out", str(tmp_path / out), "--limit", "1")
    assert result.exit_code == 2, result.output
    assert f"{tmp_path / place}: error[OUT_UNUSABLE]: {message}" in result.stderr
    assert "hint: give --out a folder you can write to" in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)  # no traceback
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"] and (tmp_path / "notes.txt").read_text() == "mine\n"


def test_an_out_that_cannot_be_created_is_a_located_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "locked" / "bfcl"
    real_mkdir = Path.mkdir

    def refused(self: Path, *args: Any, **kwargs: Any) -> None:
        if self == out:  # as a read-only folder (or file system) refuses it, whoever runs the test
            raise PermissionError(13, "Permission denied", str(self))
        real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", refused)
    result = invoke("trial", "import", "bfcl", "--category", "multi_turn_base",
                    "--out", str(out), "--limit", "1")
    assert result.exit_code == 2, result.output
    assert f"{out}: error[OUT_UNUSABLE]: cannot create the output folder: Permission denied" in result.stderr
    assert "hint: give --out a folder you can write to" in result.stderr


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes into a read-only folder")
def test_an_out_in_a_read_only_folder_is_a_located_error(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        result = invoke("trial", "import", "bfcl", "--category", "multi_turn_base",
                        "--out", str(locked / "bfcl"), "--limit", "1")
    finally:
        locked.chmod(0o700)
    assert result.exit_code == 2, result.output
    assert "error[OUT_UNUSABLE]: cannot create the output folder: Permission denied" in result.stderr


@pytest.mark.parametrize(("parameters", "message"), [
    ({"type": "string"}, "function 'g': parameters must be an object schema (type dict), not type 'string'"),
    ({"type": "array", "items": {"type": "string"}}, "not type 'array'"),
    ({"type": "dict", "properties": [{"name": "x"}]}, "function 'g': parameters.properties must map parameter names"),
])
def test_a_function_doc_whose_parameters_are_not_an_object_schema_is_a_located_error(
        parameters: dict[str, Any], message: str) -> None:
    mapping = source.load("multi_turn_base").type_mapping
    with pytest.raises(BfclDataError) as caught:
        convert_tool({"name": "g", "description": "d", "parameters": parameters}, mapping, where="docs.json:7")
    assert caught.value.location == "docs.json:7" and message in caught.value.message
    assert caught.value.hint is not None and "bfcl-eval" in caught.value.hint


def test_function_docs_are_located_at_their_line() -> None:
    bench = source.load("multi_turn_base")
    for class_name, docs in bench.func_docs.items():
        places = bench.func_doc_locations[class_name]
        assert len(places) == len(docs)
        path, line = places[0].rsplit(":", 1)
        assert json.loads(Path(path).read_text(encoding="utf-8").splitlines()[int(line) - 1]) == docs[0]
