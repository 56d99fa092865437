"""Entries of an overlay that can never apply, under the one matching rule.

``match:`` globs are compared with a model's ``name``, ``litellm_models`` keys with its model id
``<provider>/<name>`` (or its wire model). These checks find what that rule makes unreachable:
some need only the overlay and the base data, the rest the run config's (or catalogue's) models.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from capplan.core.diagnostics import Diagnostic, did_you_mean
from capplan.compiler.matching import glob_match
from capplan.compiler.inputs.providers_file import binding_key
from capplan.compiler.loading import Loaded

if TYPE_CHECKING:  # annotations only: plain lint never builds a plan nor reads a run config
    from capplan.compiler.inputs.overlay_file import OverlayFile
    from capplan.compiler.inputs.run_config import ModelConfig
    from capplan.executor.plan import Plan


def glob_written_as_model_id(overlay: Loaded[OverlayFile]) -> list[Diagnostic]:
    """A glob that matches a litellm_models key's text but not the name of the model that key is for."""
    out = []
    for key in overlay.model.litellm_models:
        provider, sep, name = key.partition("/")
        if not sep:
            continue
        for preset, entry in overlay.model.presets.items():
            for i, glob in enumerate(entry.match):
                if glob_match(key.lower(), glob.lower()) and not glob_match(name.lower(), glob.lower()):
                    bare = glob.split("/", 1)[1] if "/" in glob else glob
                    out.append(overlay.source.diag(
                        ("presets", preset, "match", i), "glob-is-model-id",
                        f"glob {glob!r} matches the litellm_models key {key!r}, but globs match the model "
                        f"name, and the model that key is for has provider {provider!r} and name {name!r}: "
                        "no model gets both this preset and that entry",
                        f"write the glob over the name: {bare!r}", "warning"))
    return out


def unknown_provider_keys(overlay: Loaded[OverlayFile], known: Iterable[str]) -> list[Diagnostic]:
    """A `providers:` block keyed by a provider nothing declares (a typo such as `anthropics`)."""
    valid = set(known) | set(overlay.model.bindings)
    out = []
    for key in overlay.model.providers:
        if key not in valid:
            out.append(overlay.source.diag(
                ("providers", key), "unknown-provider",
                f"no provider binding is named {key!r}, so this block applies only to models whose provider's "
                "first '/' segment is exactly that",
                did_you_mean(key, valid) or "declare the provider under `bindings:`", "warning"))
    return out


def unused_by_models(overlay: Loaded[OverlayFile], models: dict[str, ModelConfig], plans: dict[str, Plan],
                     models_file: str) -> list[Diagnostic]:
    """Globs that match no model name, litellm_models keys no model id uses, providers no model has."""
    out = []
    names = {key: cfg.name for key, cfg in models.items()}
    ids = {key: f"{cfg.provider}/{cfg.name}" for key, cfg in models.items()}
    for preset, entry in overlay.model.presets.items():
        for i, glob in enumerate(entry.match):
            if any(glob_match(n.lower(), glob.lower()) for n in names.values()):
                continue
            by_id = [k for k, mid in ids.items() if glob_match(mid.lower(), glob.lower())]
            hint = (f"globs match the model name, not provider/name: for {by_id[0]!r} that is "
                    f"{names[by_id[0]]!r}" if by_id else None)
            out.append(overlay.source.diag(("presets", preset, "match", i), "glob-matches-no-model",
                                           f"glob {glob!r} matches no model name in {models_file}", hint, "warning"))
    used = {p.model.model_id for p in plans.values()} | {p.model.wire_model for p in plans.values()}
    for key in overlay.model.litellm_models:
        if key in used:
            continue
        by_name = [k for k, n in names.items() if n == key]
        hint = (f"keys are model ids '<provider>/<name>': for {by_name[0]!r} that is {ids[by_name[0]]!r}"
                if by_name else did_you_mean(key, used, list_max=6))
        out.append(overlay.source.diag(("litellm_models", key), "unused-litellm-model",
                                       f"no model in {models_file} has the model id {key!r}, so this entry "
                                       "never applies", hint, "warning"))
    providers = {binding_key(cfg.provider) for cfg in models.values()}
    for key in overlay.model.bindings:
        if key not in providers:
            out.append(overlay.source.diag(("bindings", key), "unused-binding",
                                           f"no model in {models_file} has provider {key!r}",
                                           did_you_mean(key, providers, list_max=6), "warning"))
    return out
