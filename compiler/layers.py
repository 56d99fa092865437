"""The layer merge: which layers a model gets, in which order, and who set each field.

Merge behaviour is declared on the input models' fields (:class:`MergeByKey`); everything
else is replaced whole by a later layer.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from capplan.compiler.inputs.common import MergeByKey
from capplan.compiler.inputs.preset_file import PresetBody
from capplan.compiler.inputs.providers_file import binding_key
from capplan.compiler.loading import Inputs
from capplan.compiler.matching import Candidate
from capplan.core.reference_mode import reference_mode, speed_memo
from capplan.core.yaml_source import Loc, SourceFile
from capplan.executor.plan import Provenance
from capplan.executor.value_rules import value_key


@dataclass(frozen=True)
class Layer:
    """One contribution to a model's configuration."""

    name: str  # e.g. "default", "preset:qwen", "providers:openrouter", "overlay:ops.yaml"
    body: PresetBody
    source: SourceFile
    loc: Loc


@dataclass
class Merged:
    """The merged values and, per dotted path, the layer that set them."""

    values: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Provenance] = field(default_factory=dict)


def layers_for(inputs: Inputs, provider: str, matched: Candidate | None) -> list[Layer]:
    """The layers of one model, lowest first. This is the only place the order is decided."""
    key = binding_key(provider)
    layers: list[Layer] = []
    presets = inputs.presets
    # 1. the base file's `default:` block
    if presets.model.default is not None:
        layers.append(Layer("default", presets.model.default, presets.source, ("default",)))
    # 2. the first matching preset (overlay presets are tried before bundled ones)
    if matched is not None:
        layers.append(Layer(f"preset:{matched.name}", matched.entry, matched.source, ("presets", matched.name)))
    # 3. the base file's `providers:` overlay for the model's provider
    if key in presets.model.providers:
        layers.append(Layer(f"providers:{key}", presets.model.providers[key], presets.source, ("providers", key)))
    # 4. each operator overlay's `providers:` entry, in the order the overlays were given
    for ov in inputs.overlays:
        if key in ov.model.providers:
            layers.append(Layer(f"overlay:{ov.source.stable_name}", ov.model.providers[key], ov.source, ("providers", key)))
    # 5. the run config's own model block is applied by the caller (legacy capability switches)
    return layers


#: one value a layer sets: its path in the merged values, the value, and who set it
Setting = tuple[tuple[str, ...], Any, Provenance]


class LayerMemo:
    """The settings of each layer one compile has walked, for the next model that gets the same layer.

    Every model of a provider gets the same ``default:`` and ``providers:`` layers, and often the
    same preset: walking a layer (its fields in file order, key paths, provenance) was about a
    tenth of compiling the catalogue plus 5 000 synthetic models (``benchmarks/compiler_speed.py``,
    memory row). One memo lives as long as one compile, so it never keeps inputs alive after it;
    the reference mode walks every layer again.
    """

    def __init__(self) -> None:
        self._walked: dict[tuple[str, int, int, Loc], tuple[Layer, tuple[Setting, ...]]] = {}

    def settings(self, layer: Layer) -> tuple[Setting, ...]:
        key = (layer.name, id(layer.body), id(layer.source), layer.loc)
        hit = self._walked.get(key)
        if hit is not None:  # the layer is kept beside its settings, so the ids cannot be reused
            return hit[1]
        found = _settings(layer)
        self._walked[key] = (layer, found)
        return found


def merge(layers: list[Layer], memo: LayerMemo | None = None) -> Merged:
    """Apply ``layers`` in order (each layer's settings from ``memo`` when given and not in the reference mode)."""
    if memo is not None and reference_mode():
        memo = None
    merged = Merged()
    for layer in layers:
        for path, value, who in memo.settings(layer) if memo is not None else _settings(layer):
            _set(merged, path, value, who)
    return merged


def _settings(layer: Layer) -> tuple[Setting, ...]:
    """What ``layer`` sets, in the order it sets it."""
    out: list[Setting] = []
    _walk_model(out, layer, layer.body, (), layer.loc)
    return tuple(out)


def _walk_model(out: list[Setting], layer: Layer, model: BaseModel, path: tuple[str, ...], loc: Loc) -> None:
    fields = type(model).model_fields
    items = [(k, getattr(model, k)) for k in model.model_fields_set if k in fields]
    items += list((model.model_extra or {}).items())
    for key, value in sorted(items, key=lambda kv: layer.source.position((*loc, kv[0]))):
        if key in ("match", "match_provider") or value is None:
            continue
        marker = _merge_marker(type(model), key)
        if marker is not None and isinstance(value, BaseModel):
            _walk_model(out, layer, value, (*path, key), (*loc, key))
        elif marker is not None and isinstance(value, dict):
            _walk_mapping(out, layer, value, (*path, key), (*loc, key), marker.depth)
        else:
            out.append(((*path, key), value, _credit(layer, (*loc, key))))


def _walk_mapping(out: list[Setting], layer: Layer, value: dict[Any, Any], path: tuple[str, ...], loc: Loc,
                  depth: int) -> None:
    for k, v in value.items():
        # value-rule keys are canonicalised so `0` and `0.0` are the same rule across layers
        canon = value_key(path[-1], k) if len(path) >= 2 and path[-2] == "param_value_rules" else str(k)
        if depth > 1 and isinstance(v, dict):
            _walk_mapping(out, layer, v, (*path, canon), (*loc, k), depth - 1)
        else:
            out.append(((*path, canon), v, _credit(layer, (*loc, k))))


def _credit(layer: Layer, loc: Loc) -> Provenance:
    return shared_provenance(layer.name, layer.source.stable_name, layer.source.key_path(loc))


def _set(merged: Merged, path: tuple[str, ...], value: Any, who: Provenance) -> None:
    node = merged.values
    for part in path[:-1]:
        node = node.setdefault(part, {})
    node[path[-1]] = value
    dotted = ".".join(path)
    # a replaced subtree forgets the provenance of what it replaced
    for stale in [p for p in merged.provenance if p.startswith(dotted + ".")]:
        del merged.provenance[stale]
    merged.provenance[dotted] = who


@speed_memo(4096)
def shared_provenance(layer: str, file: str | None, key: str | None) -> Provenance:
    """One frozen record per (layer, file, key), shared by every plan it credits.

    Each model's merge credits the same default, preset and provider fields again; compiling the
    catalogue plus 5 000 synthetic models (``benchmarks/compiler_speed.py``, memory row) built
    about twelve equal records per plan and kept them all alive until the plans were written.
    """
    return Provenance(layer=layer, file=file, key=key)


_MARKERS: dict[tuple[type[BaseModel], str], MergeByKey | None] = {}


def _merge_marker(cls: type[BaseModel], key: str) -> MergeByKey | None:
    """How field ``key`` of ``cls`` merges (None: replaced whole); a fact of the class, looked up once."""
    memo = (cls, key)
    if memo not in _MARKERS:
        info = cls.model_fields.get(key)
        marker = next((m for m in (info.metadata if info else []) if isinstance(m, MergeByKey)), None)
        if marker is None and info is not None:
            marker = _marker_in_annotation(info.annotation)
        _MARKERS[memo] = marker
    return _MARKERS[memo]


def _marker_in_annotation(annotation: Any) -> MergeByKey | None:
    # `Annotated[X, MergeByKey()] | None` keeps the marker one level down
    for arg in typing.get_args(annotation):
        if typing.get_origin(arg) is typing.Annotated:
            return next((m for m in arg.__metadata__ if isinstance(m, MergeByKey)), None)
    return None
