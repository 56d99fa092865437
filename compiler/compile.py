"""Compile a set of models into plans: the whole-run part (candidates, gates, warnings)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from capplan.core.diagnostics import Diagnostic, InputError, did_you_mean, errors_only
from capplan.compiler.inputs.providers_file import binding_key
from capplan.compiler.inputs.run_config import ModelConfig
from capplan.compiler.inputs.preset_file import PresetFile
from capplan.compiler.loading import Inputs, Loaded, load_inputs
from capplan.compiler.manifest import Manifest, build_manifest
from capplan.compiler.layers import LayerMemo
from capplan.compiler.matching import Matcher, candidates_of
from capplan.compiler.policy_checks import CleanPolicies
from capplan.compiler.plan_builder import LitellmDecl, build_plan, input_sources
from capplan.compiler.probe_evidence import has_probe_evidence, route_of, unmatched_routes
from capplan.compiler.probe_routes import RouteKey
from capplan.core.yaml_source import SourceFile
from capplan.compiler.usage_checks import glob_written_as_model_id, unknown_provider_keys
from capplan.executor.plan import Plan
from capplan.core.reference_mode import reference_mode
from capplan.core.safe_names import MAX_NAME_CHARS, name_problem



@dataclass
class Compiled:
    """Plans by model key, the run's manifest, and the warnings seen on the way."""

    plans: dict[str, Plan]
    manifest: Manifest
    warnings: list[Diagnostic] = field(default_factory=list)
    #: the files read, to show provenance key paths as lines (:mod:`capplan.compiler.provenance_lines`)
    sources: list[SourceFile] = field(default_factory=list)


def litellm_decls(inputs: Inputs) -> dict[str, LitellmDecl]:
    """litellm_models entries across overlays; a later overlay's entry replaces an earlier one."""
    out: dict[str, LitellmDecl] = {}
    for ov in inputs.overlays:
        for key, decl in ov.model.litellm_models.items():
            out[key] = LitellmDecl(key, decl, ov.source)
    return out


def engine_version_gate(presets: Loaded[PresetFile]) -> list[Diagnostic]:
    """The data's `requires_capplan` specifier must admit this capplan."""
    spec_text = presets.model.requires_capplan
    if spec_text is None:
        return []
    from capplan.compiler.version_gate import BadSpecifier, admits, installed_version

    src = presets.source
    mine = installed_version()
    try:
        if admits(spec_text, mine):
            return []
    except BadSpecifier:
        return [src.diag(("requires_capplan",), "wrong-type", f"not a version specifier: {spec_text!r}")]
    return [src.diag(("requires_capplan",), "engine-version",
                     f"this data needs capplan {spec_text}, but capplan {mine} is installed",
                     "upgrade capplan, or compile against data that targets this version (--data DIR)")]


def known_providers(inputs: Inputs) -> set[str]:
    """Provider keys something declares: shipped bindings, the base `providers:` blocks, the models' own."""
    return (set(inputs.providers.model.root) | set(inputs.presets.model.providers)
            | {binding_key(cfg.provider) for cfg in inputs.run.model.models.values()})


#: where a streaming compile hands each plan as soon as it is built (a writer, a golden check)
PlanSink = Callable[[str, Plan], None]


def compile_models(inputs: Inputs, models: dict[str, ModelConfig] | None = None, *,
                   keep_going: bool = False, sink: PlanSink | None = None) -> Compiled:
    """Compile ``models`` (default: every model of the run config / catalogue).

    ``keep_going`` (lint only): errors are returned among the diagnostics instead of raised, with
    the plans of every model, so checks that look at all models still run; nothing is written.

    ``sink``: each plan goes to it as soon as it is built, and is let go rather than kept
    (``Compiled.plans`` is then empty; the manifest lists every plan's fingerprint). Once any
    error is seen no further plan is handed over, since the caller will throw the set away. A
    compile of thousands of models then holds one plan at a time, not all of them
    (``benchmarks/compiler_speed.py``, memory row); the reference mode holds every plan and hands
    them over at the end, the plain way.
    """
    chosen = inputs.run.model.models if models is None else models
    candidates, warnings = candidates_of(inputs.presets, inputs.overlays)
    matcher = Matcher(candidates)
    warnings = inputs.warnings + warnings
    problems = engine_version_gate(inputs.presets)
    known = known_providers(inputs)
    for ov in inputs.overlays:
        warnings += glob_written_as_model_id(ov) + unknown_provider_keys(ov, known)
    decls = litellm_decls(inputs)
    streaming = sink is not None and not reference_mode()
    # what the models of this compile share, worked out once (both are dropped with the compile)
    layer_memo, clean_policies = LayerMemo(), CleanPolicies()
    failed = bool(errors_only(problems))
    plans: dict[str, Plan] = {}
    fingerprints: dict[str, str] = {}
    # only the facts the whole-run checks need are kept of a plan: its fingerprint and, when some
    # overlay carries probe evidence, its route
    routes: dict[str, RouteKey | None] | None = {} if has_probe_evidence(inputs) else None
    for key, cfg in chosen.items():
        unsafe = name_problem(key)  # the one rule for names that become path segments
        if unsafe is not None:
            problems.append(_bad_model_key(inputs.run.source, key, unsafe))
            failed = True
            continue
        plan, diags = build_plan(inputs, matcher, decls, key, cfg, layer_memo, clean_policies)
        problems += diags
        failed = failed or any(d.severity == "error" for d in diags)
        fingerprints[key] = plan.fingerprint
        if routes is not None:
            routes[key] = route_of(plan)
        if not streaming:
            plans[key] = plan
        elif not failed:
            assert sink is not None
            sink(key, plan)
        del plan  # streaming: let it go before the next one is built
    problems += unmatched_routes(inputs, routes or {})
    errors = errors_only(problems)
    if errors and not keep_going:
        raise InputError(errors + warnings)
    if sink is not None and not streaming:
        for key, plan in plans.items():
            sink(key, plan)
        plans = {}
    return Compiled(plans, build_manifest(inputs, fingerprints), warnings + problems, input_sources(inputs))


class PlanTarget(Protocol):
    """Where a streaming compile sends plans: a plan set being written, a golden check."""

    def add(self, key: str, plan: Plan) -> None: ...

    def abort(self) -> None: ...


T = TypeVar("T", bound=PlanTarget)


@dataclass
class Streamed(Generic[T]):
    """A compile streamed into a target: the compile's outcome, then the target to finish."""

    compiled: Compiled
    _target: T | None
    _open_error: InputError | None

    def target(self) -> T:
        """The target, to commit or report; raises the error it could not be opened with."""
        if self._open_error is not None:
            raise self._open_error
        assert self._target is not None
        return self._target


def compile_into(inputs: Inputs, models: dict[str, ModelConfig] | None,
                 open_target: Callable[[set[str]], T]) -> Streamed[T]:
    """Compile ``models`` (default: all), each plan going to ``open_target(model keys)`` as it is built.

    The target is opened first, but an error opening it (a bad ``--out``) is raised only by
    :meth:`Streamed.target`, after the compile: an input error is reported first, as when the
    plans were written at the end. A compile that fails aborts the target.
    """
    chosen = inputs.run.model.models if models is None else models
    keys = {key for key in chosen if name_problem(key) is None}
    target: T | None = None
    open_error: InputError | None = None
    try:
        target = open_target(keys)
    except InputError as exc:
        open_error = exc
    try:
        compiled = compile_models(inputs, models, sink=target.add if target is not None else _discard)
    except BaseException:
        if target is not None:
            target.abort()
        raise
    return Streamed(compiled, target, open_error)


def _discard(key: str, plan: Plan) -> None:
    """The sink of a compile whose target could not be opened: its error is raised after the compile."""


def load_selected(*, data_dir: Path | None = None, run_config: Path | None = None, overlays: list[Path] | None = None,
                  model: str | None = None, root: Path | None = None) -> tuple[Inputs, dict[str, ModelConfig] | None]:
    """The inputs and the models ``model`` picks (see :func:`compile_paths`)."""
    inputs = load_inputs(data_dir=data_dir, run_config=run_config, overlays=list(overlays or []), root=root)
    return inputs, select_models(inputs, model)


def _bad_model_key(source: SourceFile, key: str, problem: str) -> Diagnostic:
    """A model key names its plan file; the key is shown only when it is short and printable."""
    diag = source.diag(("models", key), "bad-model-key", f"model key {problem}; it names the plan file",
                       "use letters, digits and . _ - + = @ , starting with a letter or digit (e.g. claude-opus-4.7)")
    if len(key) > MAX_NAME_CHARS or not key.isprintable():
        written = list(source.data.get("models") or {}) if isinstance(source.data, dict) else []
        diag = dataclasses.replace(diag, path=f"models[{written.index(key)}]" if key in written else "models")
    return diag


def compile_paths(*, data_dir: Path | None = None, run_config: Path | None = None,
                  overlays: list[Path] | None = None, model: str | None = None, root: Path | None = None) -> Compiled:
    """Load inputs and compile; ``model`` picks one catalogue key or an ad-hoc ``provider/name``.

    ``root`` is the project root that names input files in plans (default: found from the cwd).
    """
    inputs, models = load_selected(data_dir=data_dir, run_config=run_config, overlays=overlays, model=model, root=root)
    return compile_models(inputs, models)


def select_models(inputs: Inputs, model: str | None) -> dict[str, ModelConfig] | None:
    """None (all), the catalogue entry named by key or by provider/name, or an ad-hoc model."""
    if model is None:
        return None
    models = inputs.run.model.models
    if model in models:
        return {model: models[model]}
    for key, cfg in models.items():
        if f"{cfg.provider}/{cfg.name}" == model:
            return {key: cfg}
    provider, sep, name = model.partition("/")
    if not sep or not name:
        # located at the models the key was looked up in: the argument itself is not a file
        close = did_you_mean(model, models, list_max=0)
        raise InputError([inputs.run.source.diag(
            ("models",), "bad-model",
            f"no model key {model[:MAX_NAME_CHARS]!r} here, and it is not PROVIDER/NAME either",
            hint=(f"{close} " if close else "") + "e.g. openrouter/anthropic/claude-opus-4.7, or a key: "
                 + ", ".join(sorted(models)[:8]) + (", …" if len(models) > 8 else ""))])
    key = re.sub(r"[^A-Za-z0-9._-]+", "__", model)
    return {key: ModelConfig(provider=provider, name=name)}
