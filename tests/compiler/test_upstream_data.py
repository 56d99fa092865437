"""The upstream tolokaforge-models 1.8.0 data files compile unchanged, every preset in them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import yaml

from capplan.compiler.checks import blocks_of
from capplan.compiler.compile import compile_paths
from capplan.compiler.inputs.preset_file import SLOT_KEYS, PresetFile
from capplan.compiler.matching import Candidate, first_match
from capplan.executor.registry import policy_targets


def _models_reaching_every_preset(presets: PresetFile) -> dict[str, tuple[str, str]]:
    """For each preset, a concrete model name (from one of its globs) that first-matches it."""
    candidates = [Candidate(n, e, None, "bundled") for n, e in presets.presets.items()]  # type: ignore[arg-type]
    chosen: dict[str, tuple[str, str]] = {}
    for cand in candidates:
        for glob in cand.entry.match:
            name = glob.replace("*", "x")
            for provider in ("openrouter", *(cand.entry.match_provider or ())):
                hit = first_match(candidates, name, provider)
                if hit is not None and hit.name == cand.name:
                    chosen[cand.name] = (provider, name)
                    break
            if cand.name in chosen:
                break
    return chosen


def test_every_upstream_policy_name_is_registered(upstream_data_dir: Path) -> None:
    presets = PresetFile.model_validate(yaml.safe_load((upstream_data_dir / "model_presets.yaml").read_text()))
    targets = policy_targets()
    missing = [(loc, slot, getattr(block, slot).name)
               for loc, block in blocks_of(presets.default, presets.presets, presets.providers)
               for slot in SLOT_KEYS
               if getattr(block, slot) is not None and getattr(block, slot).name not in targets[slot]]
    assert missing == []


def test_upstream_data_compiles_every_preset(upstream_data_dir: Path, write: Callable[[str, str], Path]) -> None:
    presets = PresetFile.model_validate(yaml.safe_load((upstream_data_dir / "model_presets.yaml").read_text()))
    reach = _models_reaching_every_preset(presets)
    assert set(reach) == set(presets.presets), "every upstream preset must be reachable by some model name"
    lines = ["models:"]
    for preset, (provider, name) in sorted(reach.items()):
        lines += [f"  {preset}:", f"    provider: {provider}", f"    name: {name!r}"]
    cfg = write("upstream_run.yaml", "\n".join(lines) + "\n")
    result = compile_paths(data_dir=upstream_data_dir, run_config=cfg)
    assert {key: plan.effective_preset for key, plan in result.plans.items()} == {p: p for p in reach}
    assert [w for w in result.warnings if w.severity == "error"] == []
    kimi = result.plans["moonshot_kimi_k3"]
    assert kimi.policies["message_assembly_policy"].params == {"empty_assistant_filler": " "}
    assert kimi.openrouter is not None and kimi.openrouter.provider_order == ("moonshotai",)
    # a --data folder is named by a stable label: no machine's path in a plan
    assert result.manifest.inputs["presets"].path == "data:model_presets.yaml"
    assert str(upstream_data_dir) not in kimi.to_bytes().decode()


def test_upstream_catalogue_compile_with_bundled_catalogue(upstream_data_dir: Path) -> None:
    result = compile_paths(data_dir=upstream_data_dir)
    assert result.plans["kimi-k3"].effective_preset == "moonshot_kimi_k3"
    assert result.plans["cohere-command-a-plus"].effective_preset == "cohere_command_a_plus_05_2026"
