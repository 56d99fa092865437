"""Plans depend only on what affects their model: not on the cwd, the path spelling or the machine."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from capplan.compiler.compile import compile_paths
from capplan.compiler.explain import explain
from capplan.compiler.provenance_lines import LineIndex
from capplan.compiler.manifest import MANIFEST_FILE
from capplan.presets import data_dir
from tests.cli_runner import CAPPLAN

RUN = """models:
  gpt-4o: {provider: openai, name: gpt-4o}
  kimi: {provider: openrouter, name: moonshotai/kimi-k3}
  claude: {provider: anthropic, name: claude-opus-4.7}
"""
OVERLAY = "providers:\n  openai:\n    empty_retry_count: 2\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project with its own git root, a run config, an overlay and a copy of the base data."""
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / "configs").mkdir()
    (root / "configs" / "run.yaml").write_text(RUN, encoding="utf-8")
    (root / "configs" / "ops.yaml").write_text(OVERLAY, encoding="utf-8")
    shutil.copytree(data_dir(), root / "data", ignore=shutil.ignore_patterns("catalogue.yaml", "*.py", "__*"))
    return root


def compile_in(cwd: Path, *args: str, out: Path) -> dict[str, bytes]:
    done = subprocess.run([str(CAPPLAN), "compile", *args, "--out", str(out)], cwd=cwd, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


def test_same_plans_from_any_folder_and_any_spelling(project: Path, tmp_path: Path) -> None:
    relative = compile_in(project, "--config", "configs/run.yaml", "--presets-file", "configs/ops.yaml",
                          "--data", "data", out=tmp_path / "a")
    absolute = compile_in(project / "configs", "--config", str(project / "configs" / "run.yaml"),
                          "--presets-file", str(project / "configs" / "ops.yaml"), "--data", "../data",
                          out=tmp_path / "b")
    assert relative == absolute  # plans and manifest, byte for byte
    text = b"".join(relative.values()).decode()
    assert str(tmp_path) not in text and "/proj" not in text
    manifest = json.loads(relative[MANIFEST_FILE])
    assert manifest["inputs"]["run_config"]["path"] == "configs/run.yaml"
    assert manifest["inputs"]["overlay.1"]["path"] == "configs/ops.yaml"
    assert manifest["inputs"]["presets"]["path"] == "data/model_presets.yaml"


def test_a_moved_project_compiles_to_the_same_bytes(project: Path, tmp_path: Path) -> None:
    before = compile_in(project, "--config", "configs/run.yaml", "--data", "data", out=tmp_path / "a")
    moved = tmp_path / "elsewhere" / "renamed"
    shutil.move(str(project), moved)
    assert compile_in(moved, "--config", "configs/run.yaml", "--data", "data", out=tmp_path / "b") == before


def test_a_one_preset_edit_changes_exactly_the_plans_it_affects(project: Path) -> None:
    def plans() -> dict[str, bytes]:
        compiled = compile_paths(data_dir=project / "data", run_config=project / "configs" / "run.yaml",
                                 root=project)
        return {key: plan.to_bytes() for key, plan in compiled.plans.items()}

    before = plans()
    presets = project / "data" / "model_presets.yaml"
    text = presets.read_text(encoding="utf-8")
    block = text.index("\n  moonshot_kimi_k3:")
    at = text.index("context_watermark:", block)
    end = text.index("\n", at)
    presets.write_text(text[:at] + "context_watermark: 7777" + text[end:], encoding="utf-8")
    after = plans()
    assert {k for k in before if before[k] != after[k]} == {"kimi"}


def test_plans_carry_no_input_digests_and_the_manifest_lists_every_plan() -> None:
    compiled = compile_paths()
    for plan in compiled.plans.values():
        assert "inputs" not in plan.body() and "models_fingerprint" not in plan.body()
    assert compiled.manifest.plans == {k: p.fingerprint for k, p in sorted(compiled.plans.items())}
    assert set(compiled.manifest.inputs) == {"presets", "providers", "pricing", "catalogue"}


def test_lines_added_above_a_preset_change_no_plan_and_explain_follows_them(project: Path) -> None:
    """Provenance is a key path, so only what a model's values are changes its plan; lines are
    looked up when shown, in the file as it is now."""
    def compiled() -> tuple[dict[str, bytes], str]:
        done = compile_paths(data_dir=project / "data", run_config=project / "configs" / "run.yaml",
                             overlays=[project / "configs" / "ops.yaml"], root=project)
        rows = explain(done.plans["kimi"], "loop.context_watermark", LineIndex(done.sources))
        return {key: plan.to_bytes() for key, plan in done.plans.items()}, rows[0].render()

    before, shown_before = compiled()
    assert "data/model_presets.yaml:" in shown_before
    presets = project / "data" / "model_presets.yaml"
    text = presets.read_text(encoding="utf-8")
    comment = "# a note\n# on two lines\n\n"
    new_preset = ("  # a preset no model of this run matches\n"
                  "  acme_support:\n    match: [\"acme-support-*\"]\n    empty_retry_count: 3\n\n")
    at = text.index("\npresets:\n") + len("\npresets:\n")
    presets.write_text(comment + text[:at] + new_preset + text[at:], encoding="utf-8")
    providers = project / "data" / "providers.yaml"
    providers.write_text(comment + providers.read_text(encoding="utf-8"), encoding="utf-8")
    run = project / "configs" / "run.yaml"
    run.write_text(run.read_text(encoding="utf-8").replace(
        "models:\n", "models:\n  # added above the others\n  extra: {provider: openai, name: gpt-4o-mini}\n"),
        encoding="utf-8")
    overlay = project / "configs" / "ops.yaml"
    overlay.write_text(comment + overlay.read_text(encoding="utf-8"), encoding="utf-8")

    after, shown_after = compiled()
    assert set(after) == set(before) | {"extra"}
    assert {k for k in before if before[k] != after[k]} == set()  # every plan byte-identical
    line = int(shown_before.rsplit(":", 1)[1])
    moved = line + comment.count("\n") + new_preset.count("\n")
    assert shown_after == shown_before.replace(f":{line}", f":{moved}")
    assert presets.read_text(encoding="utf-8").splitlines()[moved - 1].strip() == "context_watermark: 8000"

    text = presets.read_text(encoding="utf-8")
    block = text.index("\n  moonshot_kimi_k3:")
    at = text.index("context_watermark:", block)
    end = text.index("\n", at)
    presets.write_text(text[:at] + "context_watermark: 7777" + text[end:], encoding="utf-8")
    edited, _ = compiled()
    assert {k for k in after if after[k] != edited[k]} == {"kimi"}
