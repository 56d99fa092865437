"""Load every input file of a compilation, collecting all problems before giving up."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

from pydantic import BaseModel

from capplan.compiler.bundled_index import lookup
from capplan.compiler.checks import blocks_of, check_bindings, check_blocks
from capplan.compiler.credential_checks import foreign_key_warnings
from capplan.compiler.inputs.preset_file import PresetFile
from capplan.compiler.project_root import find_project_root, stable_name
from capplan.compiler.value_checks import check_rate_limit_names
from capplan.core.diagnostics import Diagnostic, InputError, errors_only
from capplan.core.input_limits import MAX_CONFIG_BYTES, InputLimitError, read_limited
from capplan.core.pydantic_errors import parse
from capplan.core.strict_json import StrictJSONError, loads_strict
from capplan.core.yaml_fast import read_fast_source
from capplan.core.yaml_source import SourceFile, limit_diagnostic, read_bundled, read_source
from capplan.presets import data_dir as presets_data_dir

if TYPE_CHECKING:  # imported where used, so linting one overlay does not load every format
    from capplan.compiler.inputs.overlay_file import OverlayFile
    from capplan.compiler.inputs.pricing_file import PricingFile
    from capplan.compiler.inputs.providers_file import ProvidersFile
    from capplan.compiler.inputs.run_config import RunConfig

M = TypeVar("M", bound=BaseModel)

PRESETS_FILE = "model_presets.yaml"
PROVIDERS_FILE = "providers.yaml"
PRICING_FILE = "pricing.json"
CATALOGUE_FILE = "catalogue.yaml"


@dataclass(frozen=True)
class Loaded(Generic[M]):
    """A validated input model and the source it came from (for positions and digests)."""

    model: M
    source: SourceFile


@dataclass
class Inputs:
    """Everything one compilation reads."""

    presets: Loaded[PresetFile]
    providers: Loaded[ProvidersFile]
    pricing: Loaded[PricingFile]
    run: Loaded[RunConfig]
    run_role: str  # "catalogue" or "run_config"
    overlays: list[Loaded[OverlayFile]] = field(default_factory=list)
    warnings: list[Diagnostic] = field(default_factory=list)
    #: with ``load_inputs(partial=True)`` (lint): the errors of files loaded in part; compile never sees any
    errors: list[Diagnostic] = field(default_factory=list)


def bundled_dir() -> Path:
    """Folder of the bundled data files."""
    return presets_data_dir()


def display_path(path: Path, label: str | None) -> str:
    """``bundled:<file>`` for bundled data (so plans do not depend on where capplan is installed)."""
    return f"{label}:{path.name}" if label else str(path)


def load_file(path: Path, cls: type[M], display: str, name: str | None = None, *, bundled: bool = False,
              partial: bool = False) -> tuple[Loaded[M] | None, list[Diagnostic]]:
    """Parse and validate one file; problems are returned, not raised. ``name`` is its stable name.

    ``bundled`` marks capplan's own data files, which are read without positions until needed.
    With ``partial`` (lint only), a file that parsed but failed its schema comes back as the
    model of the parts that validated, beside every schema error, so the semantic checks still
    run on its sibling blocks (see :mod:`capplan.compiler.partial_model`); without it, or when
    nothing validates, the model is None.
    """
    parsed: SourceFile | None = None  # set once the file parsed: its schema errors leave parts to check
    try:
        if path.suffix == ".json":
            source = read_json_fast(path, display)
        else:
            source = read_bundled(path, display, lookup) if bundled else read_fast_source(path, display, positioned=True)
        try:
            parsed = source
            model = parse(source, cls)
        except InputError:
            if len(source.positions) > 1:
                raise
            source = read_source(path, display)  # re-read with positions to locate the problems
            parsed = source
            model = parse(source, cls)
    except InputError as exc:
        rest = _validated_parts(parsed, cls) if partial and parsed is not None else None
        if rest is not None:
            rest.source.name = name
        return rest, list(exc.diagnostics)
    source.name = name
    return Loaded(model, source), []


def _validated_parts(source: SourceFile, cls: type[M]) -> Loaded[M] | None:
    from capplan.compiler.partial_model import validate_parts

    model = validate_parts(source.data, cls)
    return None if model is None else Loaded(model, source)


def check_run_config(run: Loaded[RunConfig]) -> list[Diagnostic]:
    """What the run config's schema cannot say: rate_limits name bindings and variables, never a key
    (a pasted key is an error that does not repeat it). Model keys are checked where plans are built."""
    limits = run.model.rate_limits
    return check_rate_limit_names(run.source, limits.providers, limits.keys)


def read_json_fast(path: Path, display: str) -> SourceFile:
    """Parse a JSON input with json (~50x faster than position-tracking YAML on a 60 KB table).

    Positions only matter when something is wrong: strict JSON errors carry their own line and
    column, and a file with a problem json does not locate (bad UTF-8, a duplicate key's
    second spelling) goes through the YAML reader, which does.
    """
    try:
        raw = read_limited(path, MAX_CONFIG_BYTES)
        data = loads_strict(raw.decode("utf-8"))
    except InputLimitError as exc:
        raise InputError([limit_diagnostic(display, exc)]) from None
    except StrictJSONError as exc:
        if exc.code == "duplicate-key":
            return read_source(path, display)
        raise InputError([Diagnostic(display, exc.line, exc.col, exc.code, str(exc))]) from None
    except (OSError, UnicodeDecodeError):
        return read_source(path, display)  # raises the located error
    if not isinstance(data, dict):
        raise InputError([Diagnostic(display, 1, 1, "not-a-mapping", "the top level must be a JSON object")])
    return SourceFile(display, hashlib.sha256(raw).hexdigest(), data, {(): (1, 1)})


def load_inputs(*, data_dir: Path | None, run_config: Path | None, overlays: list[Path],
                root: Path | None = None, partial: bool = False) -> Inputs:
    """Load base data (bundled or ``data_dir``), the run config (or catalogue) and overlays.

    ``root`` is the project root files are named relative to in plans (default: found from the
    current directory, see :mod:`capplan.compiler.project_root`). With ``partial`` (lint), files
    with errors are kept as the parts that validated and the errors are returned in
    ``Inputs.errors`` instead of raised, so the checks that need the whole picture still run;
    it raises only when a file has no usable part.
    """
    # imported here for start-up cost only (no cycle): linting one overlay builds none of these models
    from capplan.compiler.inputs.pricing_file import PricingFile
    from capplan.compiler.inputs.providers_file import ProvidersFile
    from capplan.compiler.inputs.run_config import RunConfig
    from capplan.compiler.shared_sections import preset_sections, run_config_sections
    from capplan.core.build_order import build_first

    base = data_dir or bundled_dir()
    label = None if data_dir else "bundled"
    project = root or find_project_root()
    problems: list[Diagnostic] = []

    def one(path: Path, cls: type[M], lab: str | None, outside: str = "external") -> Loaded[M] | None:
        display = display_path(path, lab)
        loaded, diags = load_file(path, cls, display, display if lab else stable_name(path, project, outside),
                                  bundled=lab == "bundled", partial=partial)
        problems.extend(diags)
        return loaded

    # sections held by more than one of the models below, built once first (seam *shared sections*;
    # the provider binding is built as providers_file is imported, above)
    if overlays:
        build_first(*preset_sections())
    presets = one(base / PRESETS_FILE, PresetFile, label, "data")
    providers = one(base / PROVIDERS_FILE, ProvidersFile, label, "data")
    pricing = one(base / PRICING_FILE, PricingFile, label, "data")
    build_first(*run_config_sections())
    if run_config is not None:
        run = one(run_config, RunConfig, None)
        role = "run_config"
    else:
        run = one(bundled_dir() / CATALOGUE_FILE, RunConfig, "bundled")
        role = "catalogue"
    overlay_paths = list(overlays)
    if run is not None and run_config is not None:
        configured = run.model.engine.presets_file
        for rel in [configured] if isinstance(configured, str) else (configured or []):
            overlay_paths.insert(0, (run_config.parent / rel))
    loaded_overlays: list[Loaded[OverlayFile]] = []
    if overlay_paths:  # the overlay's models are imported only when there is one to read
        from capplan.compiler.inputs.overlay_file import OverlayFile

        loaded_overlays = [o for o in (one(p, OverlayFile, None) for p in overlay_paths) if o is not None]

    if presets is not None:
        m = presets.model
        problems += check_blocks(presets.source, blocks_of(m.default, m.presets, m.providers))
    if providers is not None:
        problems += check_bindings(providers.source)
    for ov in loaded_overlays:
        problems += check_blocks(ov.source, blocks_of(None, ov.model.presets, ov.model.providers))
        problems += check_bindings(ov.source, ("bindings",))
        if ov.model.probe_evidence:
            from capplan.compiler.probe_routes import check_probe_block

            problems += check_probe_block(ov.source, ov.model)
        if providers is not None:
            problems += foreign_key_warnings(ov.source, ("bindings",), ov.model.bindings, providers.model.root,
                                             patches=True)
    if run is not None:
        problems += check_run_config(run)
    errors = errors_only(problems)
    warnings = [d for d in problems if d.severity == "warning"]
    if partial and presets is not None and providers is not None and pricing is not None and run is not None:
        return _compilable_parts(Inputs(presets, providers, pricing, run, role, loaded_overlays, warnings, errors))
    if errors or presets is None or providers is None or pricing is None or run is None:
        raise InputError(errors or problems)
    return Inputs(presets, providers, pricing, run, role, loaded_overlays, warnings)


def _compilable_parts(inputs: Inputs) -> Inputs:
    """``inputs`` without the blocks an error is about (lint): what is left can be compiled.

    A model whose provider's binding was left out is left out too: compiled without it, it would
    report the binding missing, which is not the problem.
    """
    from capplan.compiler.inputs.providers_file import binding_key
    from capplan.compiler.inputs.overlay_file import OverlayFile
    from capplan.compiler.inputs.run_config import RunConfig
    from capplan.compiler.partial_model import without_broken_blocks

    if not inputs.errors:
        return inputs
    overlays: list[Loaded[OverlayFile]] = []
    dropped: set[str] = set()
    for ov in inputs.overlays:
        kept = without_broken_blocks(ov.source.data, OverlayFile, inputs.errors, ov.source.display,
                                     ("presets", "providers", "bindings", "litellm_models"))
        if kept is None:
            continue
        dropped |= set(ov.model.bindings) - set(kept.bindings)
        overlays.append(Loaded(kept, ov.source))
    run = without_broken_blocks(inputs.run.source.data, RunConfig, inputs.errors, inputs.run.source.display,
                                ("models",))
    if run is not None and dropped:
        models = {k: m for k, m in run.models.items() if binding_key(m.provider) not in dropped}
        run = run.model_copy(update={"models": models}) if models else None
    if run is None:  # nothing of the run config can be compiled: the checks that need it have nothing to check
        raise InputError(inputs.errors + inputs.warnings)
    return Inputs(inputs.presets, inputs.providers, inputs.pricing, Loaded(run, inputs.run.source), inputs.run_role,
                  overlays, inputs.warnings, inputs.errors)
