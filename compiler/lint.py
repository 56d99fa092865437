"""Lint one input file of any kind: every problem in it, located, in one pass."""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from capplan.compiler.bundled_index import lookup
from capplan.compiler.checks import Block, blocks_of, check_bindings, check_blocks
from capplan.compiler.credential_checks import foreign_key_warnings
from capplan.core.diagnostics import Diagnostic, InputError, did_you_mean
from capplan.compiler.inputs.overlay_file import OverlayFile
from capplan.compiler.inputs.preset_file import PresetFile
from capplan.compiler.matching import candidates_of
from capplan.compiler.shared_sections import binding_section, preset_sections
from capplan.core.build_order import build_first
from capplan.compiler.loading import CATALOGUE_FILE, PRESETS_FILE, PROVIDERS_FILE, Loaded, bundled_dir, display_path, load_file
from capplan.core.yaml_fast import read_fast_source
from capplan.core.yaml_source import read_bundled

if TYPE_CHECKING:  # lint must not pay for the plan model unless it compiles
    from capplan.compiler.loading import Inputs
    from capplan.executor.plan import Plan

KINDS = ("auto", "presets", "overlay", "providers", "pricing", "run-config", "project")
# imported per kind, so linting an overlay does not pay for the plan model and the others
_MODELS = {"presets": "capplan.compiler.inputs.preset_file:PresetFile", "overlay": "capplan.compiler.inputs.overlay_file:OverlayFile",
           "providers": "capplan.compiler.inputs.providers_file:ProvidersFile",
           "pricing": "capplan.compiler.inputs.pricing_file:PricingFile", "run-config": "capplan.compiler.inputs.run_config:RunConfig"}


def bundled_index_note(path: Path) -> str | None:
    """Why ``path`` is skipped when it is a parse index of bundled YAML (``bundled_index.json``), else None.

    The index is capplan's own shortcut, not an input (see :mod:`capplan.compiler.bundled_index`):
    it reads as JSON with a checksum line in front, so linting it as a pricing file would fail on
    every ``capplan lint presets/*.json``. It is compared with the YAML files beside it instead, and
    a stale or damaged one is reported in the note only: compile ignores an index that does not
    match, so it never makes the inputs wrong.
    """
    from capplan.compiler.bundled_index import INDEX_NAME, UPDATE_COMMAND, build

    if path.name != INDEX_NAME or not path.is_file():
        return None
    try:
        state = "matches the YAML files beside it" if path.read_bytes() == build(path.parent) else (
            f"does not match the YAML files beside it, so compile parses them instead ({UPDATE_COMMAND} rewrites it)")
    except (OSError, ValueError):
        state = "could not be compared with the YAML files beside it"
    return f"skipped {path}: capplan's parse index of the bundled YAML, not an input file; it {state}"


def _model_for(kind: str) -> type[BaseModel]:
    module, _, attr = _MODELS[kind].partition(":")
    cls: type[BaseModel] = getattr(importlib.import_module(module), attr)
    return cls


def detect_kind(path: Path) -> str:
    """Guess a file's kind from its name, then from its top-level keys."""
    by_name = {"model_presets.yaml": "presets", "providers.yaml": "providers", "pricing.json": "pricing",
               "capplan.yaml": "project", "pyproject.toml": "project"}
    if path.name in by_name:
        return by_name[path.name]
    try:
        keys = set(read_fast_source(path).data)
    except InputError:
        return "overlay"  # the load below reports the real problem
    if "models" in keys and ("engine" in keys or not keys & {"presets", "providers", "litellm_models"}):
        return "pricing" if "_meta" in keys else "run-config"
    if "default" in keys or "requires_capplan" in keys:
        return "presets"
    return "overlay"


def lint_file(path: Path, kind: str = "auto", data_dir: Path | None = None,
              run_config: Path | None = None) -> list[Diagnostic]:
    """All diagnostics for ``path`` (errors and warnings), in one pass.

    Every check compile runs that needs only the file and the base data runs always; with
    ``run_config`` an overlay is also compiled with it, and checked against its models. A schema
    error stops nothing: the semantic checks run on every block that validated, and the checks
    that need the base data or a compile run on the file without its broken parts.
    """
    if kind == "auto":
        kind = detect_kind(path)
    if kind == "run-config":
        return _lint_by_compiling(run_config=path, overlays=[], data_dir=data_dir)
    if kind == "project":
        from capplan.core.project_file import load_project

        return load_project(path, str(path))[1]
    if kind == "overlay":
        _shared_sections_first()
    loaded, diags = load_file(path, _model_for(kind), str(path), partial=True)
    if loaded is None:
        return diags
    model = loaded.model
    if isinstance(model, PresetFile):
        from capplan.compiler.compile import engine_version_gate

        from capplan.compiler.claim_dates import undated_rules
        from capplan.compiler.replay_evidence import unscoped_evidence

        presets = Loaded(model, loaded.source)
        blocks = list(blocks_of(model.default, model.presets, model.providers))
        return sorted(set(diags + check_blocks(loaded.source, blocks) + engine_version_gate(presets)
                          + unscoped_evidence(loaded.source, blocks) + undated_rules(loaded.source, blocks)))
    if isinstance(model, OverlayFile):
        overlay = Loaded(model, loaded.source)
        blocks = list(blocks_of(None, model.presets, model.providers))
        found = (diags + check_blocks(loaded.source, blocks)
                 + check_bindings(loaded.source, ("bindings",)) + _overlay_against_base(overlay, data_dir)
                 + _replay_evidence(overlay, blocks) + _claim_evidence(overlay, blocks))
        if run_config is not None:
            found += _lint_by_compiling(run_config=run_config, overlays=[path], data_dir=data_dir)
        return once_each(found)
    if kind == "providers":
        return sorted(set(diags + check_bindings(loaded.source) + _providers_against_bundled(loaded)))
    return diags


def _shared_sections_first() -> None:
    """The preset sections' and the provider binding's validators, built before an overlay's
    (:mod:`capplan.compiler.shared_sections`)."""
    build_first(*preset_sections(), *binding_section())


def once_each(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    """Each problem once, sorted: the file's own checks and a compile can find the same one (the
    compile's wording, with the run's names in its hint, is the second and is dropped)."""
    seen: set[tuple[str, int, int, str, str]] = set()
    out = []
    for d in diagnostics:
        key = (d.file, d.line, d.col, d.code, d.path)
        if key not in seen:
            seen.add(key)
            out.append(d)
    return sorted(out)


def _replay_evidence(overlay: Loaded[OverlayFile], blocks: list[Block]) -> list[Diagnostic]:
    """Replay verdicts too old, or measured against another fingerprint, to trust, and preset
    evidence written without its route (warnings)."""
    from capplan.compiler.replay_evidence import evidence_warnings, unscoped_evidence

    found = unscoped_evidence(overlay.source, blocks)
    if not overlay.model.reasoning_replay:
        return found
    return found + evidence_warnings(overlay)


def _claim_evidence(overlay: Loaded[OverlayFile], blocks: list[Block]) -> list[Diagnostic]:
    """Claims whose evidence names no day, and probe evidence: its values, its routes, its age."""
    from capplan.compiler.claim_dates import undated_declarations, undated_rules

    model, source = overlay.model, overlay.source
    found = undated_rules(source, blocks) + undated_declarations(source, model.litellm_models)
    if not model.probe_evidence:
        return found
    from capplan.compiler.probe_evidence import stale_probe_evidence
    from capplan.compiler.probe_routes import check_probe_block

    return found + check_probe_block(source, model) + stale_probe_evidence(overlay)


def _overlay_against_base(overlay: Loaded[OverlayFile], data_dir: Path | None) -> list[Diagnostic]:
    """What compile checks with the base data alone: shadowing, replacement, provider keys, globs vs keys."""
    from capplan.compiler.inputs.providers_file import ProvidersFile
    from capplan.compiler.usage_checks import glob_written_as_model_id, unknown_provider_keys

    base_dir = data_dir or bundled_dir()
    label = None if data_dir else "bundled"
    bundled = data_dir is None
    base, diags = load_file(base_dir / PRESETS_FILE, PresetFile, display_path(base_dir / PRESETS_FILE, label),
                            bundled=bundled)
    providers, more = load_file(base_dir / PROVIDERS_FILE, ProvidersFile,
                                display_path(base_dir / PROVIDERS_FILE, label), bundled=bundled)
    if base is None or providers is None:
        return diags + more
    known = set(providers.model.root) | set(base.model.providers) | catalogue_routes()
    found = [d for d in candidates_of(base, [overlay])[1] if d.file == overlay.source.display]
    found += foreign_key_warnings(overlay.source, ("bindings",), overlay.model.bindings, providers.model.root,
                                  patches=True)
    return found + glob_written_as_model_id(overlay) + unknown_provider_keys(overlay, known)


def _providers_against_bundled(loaded: Loaded[BaseModel]) -> list[Diagnostic]:
    """A providers file's bindings against the shipped ones: keys sent to endpoints capplan does not ship."""
    from capplan.compiler.inputs.providers_file import ProvidersFile

    model = loaded.model
    if not isinstance(model, ProvidersFile):
        return []
    shipped, _ = load_file(bundled_dir() / PROVIDERS_FILE, ProvidersFile, display_path(bundled_dir() / PROVIDERS_FILE,
                                                                                     "bundled"), bundled=True)
    return foreign_key_warnings(loaded.source, (), model.root, shipped.model.root if shipped else {}, patches=False)


def catalogue_routes() -> set[str]:
    """Provider keys the bundled catalogue's models use.

    Read off the catalogue's data rather than through the run-config model (whose validator
    is a good part of linting one overlay): the catalogue is capplan's own, compiled in full by
    the golden-plan tests. A catalogue that is not a mapping of models with a provider each
    gives no routes, as one failing validation did.
    """
    from capplan.compiler.inputs.providers_file import binding_key

    try:
        models = read_bundled(bundled_dir() / CATALOGUE_FILE, "bundled:" + CATALOGUE_FILE, lookup).data.get("models")
    except InputError:
        return set()
    if not isinstance(models, dict):
        return set()
    providers = [m.get("provider") if isinstance(m, dict) else None for m in models.values()]
    if not all(isinstance(p, str) and p for p in providers):
        return set()
    return {binding_key(p) for p in providers if isinstance(p, str)}


def _lint_by_compiling(*, run_config: Path | None, overlays: list[Path], data_dir: Path | None) -> list[Diagnostic]:
    """Compile against the base data to find what needs the whole picture (shadowing, gates, models).

    Files with schema errors take part without their broken parts (``partial``), so a broken
    model block does not hide the problems of the others.
    """
    from capplan.compiler.compile import compile_models
    from capplan.compiler.loading import load_inputs
    from capplan.compiler.usage_checks import unused_by_models

    try:
        inputs = load_inputs(data_dir=data_dir, run_config=run_config, overlays=overlays, partial=True)
    except InputError as exc:
        return list(exc.diagnostics)
    try:
        compiled = compile_models(inputs, keep_going=True)
    except InputError as exc:  # a failure that leaves no plan to look at (e.g. a model that cannot be built)
        return inputs.errors + list(exc.diagnostics) + _rate_limit_names(inputs, [])
    diags = inputs.errors + compiled.warnings
    models = inputs.run.model.models
    # "no model uses it" needs a plan of every model the run names
    run_complete = (not any(d.file == inputs.run.source.display for d in inputs.errors)
                    and set(compiled.plans) == set(models))
    for ov in inputs.overlays if run_complete else ():
        diags += unused_by_models(ov, models, compiled.plans, inputs.run.source.display)
    if run_config is not None:
        diags += _rate_limit_names(inputs, compiled.plans.values())
    return diags


def _rate_limit_names(inputs: Inputs, plans: Iterable[Plan]) -> list[Diagnostic]:
    """``rate_limits`` names what ``trial run --config`` limits: a provider binding and a key variable
    some binding reads. A mistyped name would leave that provider unlimited, so it is an error here
    exactly as it is when the run starts."""
    plans = list(plans)
    bindings = dict(inputs.providers.model.root)
    for ov in inputs.overlays:
        bindings.update(ov.model.bindings)
    providers = set(bindings) | {p.binding.key for p in plans if p.binding.key}
    keys = {b.api_key_env for b in bindings.values() if b.api_key_env}
    keys |= {p.binding.binding.api_key_env for p in plans if p.binding.binding.api_key_env}
    limits, source = inputs.run.model.rate_limits, inputs.run.source
    # a name that is not a name (a pasted key, a path) is reported by check_run_config without being
    # quoted; saying here that no binding has it would print it
    out = [source.diag(("rate_limits", "providers", name), "unknown-provider",
                       f"no provider binding is called {name!r}", did_you_mean(name, providers))
           for name in limits.providers if name not in providers and _plain_name(name, provider=True)]
    out += [source.diag(("rate_limits", "keys", name), "unknown-key-variable",
                        f"no provider binding reads its key from {name!r}", did_you_mean(name, keys))
            for name in limits.keys if name not in keys and _plain_name(name, provider=False)]
    return out


def _plain_name(name: str, *, provider: bool) -> bool:
    """Whether ``name`` is safe to quote: a binding key or variable name, not something pasted."""
    from capplan.core.env_var_names import env_var_name, looks_like_credential
    from capplan.core.safe_names import name_problem

    if looks_like_credential(name):
        return False
    if provider:
        return name_problem(name) is None
    try:
        env_var_name(name)
    except ValueError:
        return False
    return True


__all__ = ["KINDS", "Loaded", "detect_kind", "lint_file", "once_each"]
