"""Lint one input file of any kind: every problem in it, located, in one pass."""

from __future__ import annotations

import importlib
from pathlib import Path

from pydantic import BaseModel

from compiler.checks import blocks_of, check_bindings, check_blocks
from compiler.diagnostics import Diagnostic, InputError
from compiler.inputs.overlay_file import OverlayFile
from compiler.inputs.preset_file import PresetFile
from compiler.matching import candidates_of
from compiler.loading import PRESETS_FILE, Loaded, bundled_dir, display_path, load_file
from compiler.yaml_source import read_source

KINDS = ("auto", "presets", "overlay", "providers", "pricing", "run-config")
# imported per kind, so linting an overlay does not pay for the plan model and the others
_MODELS = {"presets": "compiler.inputs.preset_file:PresetFile", "overlay": "compiler.inputs.overlay_file:OverlayFile",
           "providers": "compiler.inputs.providers_file:ProvidersFile",
           "pricing": "compiler.inputs.pricing_file:PricingFile", "run-config": "compiler.inputs.run_config:RunConfig"}


def _model_for(kind: str) -> type[BaseModel]:
    module, _, attr = _MODELS[kind].partition(":")
    cls: type[BaseModel] = getattr(importlib.import_module(module), attr)
    return cls


def detect_kind(path: Path) -> str:
    """Guess a file's kind from its name, then from its top-level keys."""
    by_name = {"model_presets.yaml": "presets", "providers.yaml": "providers", "pricing.json": "pricing"}
    if path.name in by_name:
        return by_name[path.name]
    try:
        keys = set(read_source(path).data)
    except InputError:
        return "overlay"  # the load below reports the real problem
    if "models" in keys and ("engine" in keys or not keys & {"presets", "providers", "litellm_models"}):
        return "pricing" if "_meta" in keys else "run-config"
    if "default" in keys or "requires_capplan" in keys:
        return "presets"
    return "overlay"


def lint_file(path: Path, kind: str = "auto", data_dir: Path | None = None) -> list[Diagnostic]:
    """All diagnostics for ``path`` (errors and warnings)."""
    if kind == "auto":
        kind = detect_kind(path)
    if kind == "run-config":
        return _lint_by_compiling(run_config=path, overlays=[], data_dir=data_dir)
    loaded, diags = load_file(path, _model_for(kind), str(path))
    if loaded is None:
        return diags
    model = loaded.model
    if isinstance(model, PresetFile):
        return check_blocks(loaded.source, blocks_of(model.default, model.presets, model.providers))
    if isinstance(model, OverlayFile):
        own = check_blocks(loaded.source, blocks_of(None, model.presets, model.providers))
        return own or _overlay_against_base(Loaded(model, loaded.source), data_dir)
    if kind == "providers":
        return check_bindings(loaded.source)
    return []


def _overlay_against_base(overlay: Loaded[OverlayFile], data_dir: Path | None) -> list[Diagnostic]:
    """Shadowing and by-name replacement need the base presets, not a whole compilation."""
    base, diags = load_file((data_dir or bundled_dir()) / PRESETS_FILE, PresetFile,
                            display_path((data_dir or bundled_dir()) / PRESETS_FILE, None if data_dir else "bundled"),
                            bundled=data_dir is None)
    if base is None:
        return diags
    return [d for d in candidates_of(base, [overlay])[1] if d.file == overlay.source.display]


def _lint_by_compiling(*, run_config: Path | None, overlays: list[Path], data_dir: Path | None) -> list[Diagnostic]:
    """Compile against the base data to find what needs the whole picture (shadowing, gates)."""
    from compiler.compile import compile_models
    from compiler.loading import load_inputs

    try:
        inputs = load_inputs(data_dir=data_dir, run_config=run_config, overlays=overlays)
        diags = compile_models(inputs).warnings
    except InputError as exc:
        diags = list(exc.diagnostics)
    return diags


__all__ = ["KINDS", "Loaded", "detect_kind", "lint_file"]
