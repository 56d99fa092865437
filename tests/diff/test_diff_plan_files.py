"""`capplan diff OLD NEW` on plan files and folders: changes, added / removed models, exit codes."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from capplan.compiler.diff.credential_routing import ROUTING_FIELDS
from tests.diff.conftest import invoke
from tests.diff.plans import Body, edit, edit_manifest, plan_paths, write_catalogue

MODEL = "claude-opus-4.7"


@pytest.fixture
def sides(tmp_path: Path) -> tuple[Path, Path]:
    """Two identical folders of the catalogue's plans."""
    old = write_catalogue(tmp_path / "old")
    new = tmp_path / "new"
    shutil.copytree(old, new)
    return old, new


#: the plans of :func:`few_sides`: the one the tests edit, and one they leave as it was
FEW = (MODEL, "gpt-4o")


@pytest.fixture
def few_sides(tmp_path: Path) -> tuple[Path, Path]:
    """Two identical folders of two catalogue plans, :data:`FEW`, their manifest listing just those.

    For the tests that edit one plan and read what the diff says of it: a diff reads and compares
    every plan of both folders, and the other catalogue plans, byte-identical on both sides, add
    time and nothing to what those tests assert. The tests of counts, folding and many models keep
    the whole catalogue (:func:`sides`).
    """
    old = write_catalogue(tmp_path / "old")
    for path in plan_paths(old):
        if path.stem not in FEW:
            path.unlink()
    edit_manifest(old, lambda body: body.update(plans={k: v for k, v in body["plans"].items() if k in FEW}))
    new = tmp_path / "new"
    shutil.copytree(old, new)
    return old, new


def changes_of(output: str, key: str) -> list[dict[str, Any]]:
    """The JSON change records of one model."""
    (model,) = [m for m in json.loads(output)["models"] if m["key"] == key]
    return list(model["changes"])


def test_identical_folders_exit_0(sides: tuple[Path, Path]) -> None:
    out = invoke("diff", *map(str, sides))
    assert out.code == 0
    assert "no differences in" in out.stdout and out.stderr == ""


def test_identical_files_exit_0(sides: tuple[Path, Path]) -> None:
    old, new = sides
    assert invoke("diff", str(old / f"{MODEL}.json"), str(new / f"{MODEL}.json")).code == 0


def _set(path: tuple[str, ...], value: object) -> Callable[[Body], None]:
    def change(body: Body) -> None:
        node = body
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = value
    return change


# checker -> (edit, changed field, layer expected from the plan's provenance, or None)
EDITS: dict[str, tuple[Callable[[Body], None], str, str | None]] = {
    "preset": (_set(("effective_preset",), "anthropic"), "effective_preset", "preset:anthropic_claude_4_7"),
    "policies": (_set(("policies", "cache_policy", "name"), "none"), "policies.cache_policy.name",
                 "preset:anthropic_claude_4_7"),
    "params": (_set(("policies", "params_policy", "params", "supports_seed"), True),
               "policies.params_policy.params.supports_seed", "preset:anthropic_claude_4_7"),
    "value_rules": (_set(("param_value_rules", "tool_choice"),
                         {"auto": {"action": "drop", "evidence": "2026-09-01, test"}}),
                    "param_value_rules.tool_choice", None),
    "allowed_params": (_set(("allowed_openai_params",), ["tools"]), "allowed_openai_params", None),
    "binding": (_set(("binding", "binding", "api_key_env"), "OTHER_KEY"), "binding.binding.api_key_env", "binding"),
    "routing": (_set(("openrouter",), {"provider_order": ["anthropic"], "allow_fallbacks": False}), "openrouter",
                None),
    "loop": (_set(("loop", "context_watermark"), 9000), "loop.context_watermark", "preset:anthropic_claude_4_7"),
    "pricing": (_set(("pricing", "input"), 6.0), "pricing.input", "pricing"),
    "defaults": (_set(("request_defaults", "temperature"), 0.5), "request_defaults.temperature",
                 f"model:{MODEL}"),
}
#: run-level: the manifest's models_fingerprint belongs to every plan of the folder
MANIFEST_EDITS = {"inputs": (_set(("models_fingerprint",), "0" * 64), "models_fingerprint", None)}


@pytest.mark.parametrize("check", sorted({**EDITS, **MANIFEST_EDITS}))
def test_each_checker_reports_its_field_with_the_layer(few_sides: tuple[Path, Path], check: str) -> None:
    old, new = few_sides
    if check in MANIFEST_EDITS:
        change, field, layer = MANIFEST_EDITS[check]
        edit_manifest(new, change)
    else:
        change, field, layer = EDITS[check]
        edit(new / f"{MODEL}.json", change)
    out = invoke("diff", str(old), str(new), "--format", "json")
    assert out.code == 1
    # exactly one checker owns the field; run-level facts are reported once, for the run
    (record,) = json.loads(out.stdout)["inputs"] if check in MANIFEST_EDITS else changes_of(out.stdout, MODEL)
    kind = "added" if check == "value_rules" else "modified"  # the catalogue's Claude has no value rules
    assert (record["check"], record["field"], record["kind"]) == (check, field, kind)
    assert record["old"] != record["new"]
    assert (record["layer"] or {}).get("layer") == layer
    # a credential-routing field is reported whichever checks run: hiding it takes more than --ignore
    hidden = 1 if tuple(field.split(".")) in ROUTING_FIELDS else 0
    assert invoke("diff", str(old), str(new), "--ignore", check).code == hidden
    assert invoke("diff", str(old), str(new), "--checks", check).code == 1
    others = ",".join(sorted((set(EDITS) | set(MANIFEST_EDITS)) - {check}))
    assert invoke("diff", str(old), str(new), "--checks", others).code == hidden


def test_text_output_shows_old_new_and_layer(few_sides: tuple[Path, Path]) -> None:
    old, new = few_sides
    edit(new / f"{MODEL}.json", _set(("loop", "context_watermark"), 9000))
    out = invoke("diff", str(old), str(new))
    assert out.code == 1
    line = next(x for x in out.stdout.splitlines() if "loop.context_watermark" in x)
    assert "12000 → 9000" in line and "[preset:anthropic_claude_4_7 (bundled:model_presets.yaml:" in line


def test_added_and_removed_fields_and_models(sides: tuple[Path, Path]) -> None:
    old, new = sides
    (new / "gpt-4o.json").unlink()
    shutil.copy(old / "o3.json", new / "o3-copy.json")

    def drop_and_add(body: Body) -> None:
        del body["policies"]["params_policy"]["params"]["supports_seed"]
        body["policies"]["params_policy"]["params"]["brand_new_flag"] = True

    edit(new / f"{MODEL}.json", drop_and_add)
    out = invoke("diff", str(old), str(new), "--format", "json")
    assert out.code == 1
    doc = json.loads(out.stdout)
    status = {m["key"]: m["status"] for m in doc["models"]}
    assert status["gpt-4o"] == "removed" and status["o3-copy"] == "added" and status[MODEL] == "changed"
    kinds = {c["field"].rsplit(".", 1)[1]: (c["kind"], c["old"], c["new"]) for c in changes_of(out.stdout, MODEL)}
    assert kinds == {"brand_new_flag": ("added", None, True), "supports_seed": ("removed", False, None)}
    assert doc["counts"] == {"changed": 1, "inputs-only": 0, "added": 1, "removed": 1,
                             "unchanged": len(status) - 3}
    text = invoke("diff", str(old), str(new)).stdout
    assert "gpt-4o: removed" in text and "o3-copy: added" in text and "(absent)" in text


def test_an_input_change_is_one_run_level_line_and_can_be_ignored(sides: tuple[Path, Path]) -> None:
    old, new = sides
    edit_manifest(new, _set(("inputs", "presets", "sha256"), "f" * 64))  # run-level: every plan reads it
    n = len(plan_paths(new))
    markdown = invoke("diff", str(old), str(new), "--format", "markdown")
    assert markdown.code == 1
    assert "**Inputs** (run level" in markdown.stdout and markdown.stdout.count("inputs.presets.sha256") == 1
    assert f"| unchanged | {n} |" in markdown.stdout and "| changed | 0 |" in markdown.stdout
    assert "inputs only" not in markdown.stdout and "### " not in markdown.stdout  # no model section
    text = invoke("diff", str(old), str(new))
    assert text.code == 1 and text.stdout.count("inputs.presets.sha256") == 1
    assert "inputs (run level" in text.stdout and ": changed" not in text.stdout
    assert text.stdout.rstrip().endswith(f"0 changed, 0 added, 0 removed, {n} unchanged; 1 input change(s)")
    doc = json.loads(invoke("diff", str(old), str(new), "--format", "json").stdout)
    assert doc["differs"] is True and [c["field"] for c in doc["inputs"]] == ["inputs.presets.sha256"]
    assert doc["counts"] == {"changed": 0, "inputs-only": 0, "added": 0, "removed": 0, "unchanged": n}
    assert all(m["status"] == "unchanged" and m["changes"] == [] for m in doc["models"])
    assert invoke("diff", str(old), str(new), "--ignore", "inputs").code == 0


def test_two_files_of_different_models_are_compared_with_a_note(sides: tuple[Path, Path]) -> None:
    old, new = sides
    out = invoke("diff", str(old / "o3.json"), str(new / "gpt-4o.json"))
    assert out.code == 1
    assert "note: comparing plans of two different models: o3 and gpt-4o" in out.stdout


def test_markdown_folds_long_model_details(sides: tuple[Path, Path]) -> None:
    old, new = sides

    def many(body: Body) -> None:
        for knob in ("empty_retry_count", "output_length_retry_count", "parser_error_retry_count"):
            body["loop"][knob] = 5
        body["loop"]["default_max_turns"] = 10
        body["loop"]["tool_output_max_chars"] = 100
        body["pricing"]["input"] = 1.0
        body["pricing"]["output"] = 2.0

    edit(new / f"{MODEL}.json", many)
    edit(new / "gpt-4o.json", _set(("loop", "empty_retry_count"), 1))
    out = invoke("diff", str(old), str(new), "--format", "markdown", "--ignore", "inputs")
    assert out.code == 1
    assert f"<details><summary><b>{MODEL}</b>: 7 change(s)</summary>" in out.stdout
    assert "### `gpt-4o`" in out.stdout  # short details stay open
    assert out.stdout.index("| model | status | checks | changes |") < out.stdout.index("<details>")


def test_markdown_folds_every_model_when_many_change(sides: tuple[Path, Path]) -> None:
    old, new = sides
    keys = [p.stem for p in plan_paths(new)][:11]
    for key in keys:
        edit(new / f"{key}.json", _set(("loop", "empty_retry_count"), 4))
    out = invoke("diff", str(old), str(new), "--format", "markdown").stdout
    assert all(f"<details><summary><b>{k}</b>: 1 change(s)</summary>" in out for k in keys)
    assert "### `" not in out


def test_markdown_table_cells_survive_pipes_and_backticks(few_sides: tuple[Path, Path]) -> None:
    old, new = few_sides
    edit(new / f"{MODEL}.json", _set(("binding", "binding", "endpoint"), "https://h.example/A|B`C"))
    out = invoke("diff", str(old), str(new), "--format", "markdown", "--checks", "binding").stdout
    row = next(line for line in out.splitlines() if line.startswith("| binding |"))
    assert '``"https://h.example/A\\|B`C"``' in row
    assert row.count(" | ") == 4  # five cells: the escaped pipe does not split one
    routing = next(line for line in out.splitlines() if line.startswith(f"| `{MODEL}` | endpoint |"))
    assert '``"https://h.example/A\\|B`C"``' in routing and routing.count(" | ") == 5  # six cells in the credential-routing table


def test_json_output_is_stable(few_sides: tuple[Path, Path]) -> None:
    old, new = few_sides
    edit(new / f"{MODEL}.json", _set(("loop", "context_watermark"), 9000))
    first = invoke("diff", str(old), str(new), "--format", "json").stdout
    assert first == invoke("diff", str(old), str(new), "--format", "json").stdout
    doc = json.loads(first)
    assert (doc["format"], doc["version"], doc["differs"]) == ("capplan-diff", 1, True)
    assert set(doc) == {"format", "version", "old", "new", "checks", "differs", "counts", "notes", "models", "inputs",
                        "credential_routing", "credential_routing_changed"}
    assert (doc["credential_routing"], doc["credential_routing_changed"]) == ([], False)
    model = next(m for m in doc["models"] if m["key"] == MODEL)
    assert set(model) == {"key", "status", "old_path", "new_path", "plan_version", "changes"}
    assert set(model["changes"][0]) == {"check", "field", "kind", "old", "new", "layer"}


def test_blast_radius_between_folders_traces_changes_to_inputs(sides: tuple[Path, Path]) -> None:
    old, new = sides
    edit_manifest(new, lambda body: body["inputs"]["pricing"].update(sha256="1" * 64))  # two inputs changed
    edit_manifest(new, lambda body: body["inputs"]["presets"].update(sha256="2" * 64))
    edit(new / "gpt-4o.json", _set(("pricing", "input"), 9.0))  # set by the pricing layer
    edit(new / "o3.json", _set(("loop", "empty_retry_count"), 2))  # no layer recorded: not traceable
    out = invoke("diff", str(old), str(new), "--summary", "--format", "json")
    assert out.code == 1
    doc = json.loads(out.stdout)
    impact = {i["path"]: i["changes_plan"] for i in doc["inputs"]}
    assert impact == {"bundled:model_presets.yaml": [], "bundled:pricing.json": ["gpt-4o"]}
    assert doc["models"]["changed"] == ["gpt-4o", "o3"] and doc["models"]["unattributed"] == ["o3"]
    text = invoke("diff", str(old), str(new), "--summary").stdout
    assert "changed, cause not traced to one input: o3" in text
    markdown = invoke("diff", str(old), str(new), "--summary", "--format", "markdown").stdout
    others = len([p for p in old.glob("*.json") if p.name != "manifest.json"]) - 1  # every plan but gpt-4o
    assert f"| `bundled:pricing.json` | modified | 1 | {others} |" in markdown


def test_blast_radius_with_nothing_changed(sides: tuple[Path, Path]) -> None:
    out = invoke("diff", *map(str, sides), "--summary")
    assert out.code == 0 and "no input file changed" in out.stdout
