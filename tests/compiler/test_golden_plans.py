"""golden/plans holds the compiled plan of every catalogue model, byte for byte."""

from __future__ import annotations

from capplan.compiler.compile import compile_paths
from capplan.compiler.golden import REGEN_COMMAND, compare, default_golden_dir, plan_files
from capplan.compiler.loading import bundled_dir
from capplan.core.yaml_source import read_source
from capplan.executor.plan import load_plan


def test_golden_plans_are_current() -> None:
    report = compare(compile_paths().plans, default_golden_dir())
    assert report.clean, "\n".join(report.lines()) + f"\nreview the change, then run: {REGEN_COMMAND}"


def test_every_bundled_preset_has_a_catalogue_model() -> None:
    presets = set(read_source(bundled_dir() / "model_presets.yaml").data["presets"])
    covered = {plan.effective_preset for plan in compile_paths().plans.values()}
    assert presets - covered == set()
    assert "default" in covered


def test_golden_plans_load_and_verify() -> None:
    for path in plan_files(default_golden_dir()):
        plan = load_plan(path)
        assert plan.model.key == path.stem
        # no secret value ever lands in a plan: only env var names
        assert "sk-" not in path.read_text()
