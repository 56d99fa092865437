"""Explain a plan: each resolved field, its value, and the layer, file and line that set it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from capplan.compiler.provenance_lines import LineIndex, Located
from capplan.executor.plan import Plan, Provenance

# Fields shown as one value rather than broken into their leaves.
_ATOMIC = ("policies.*", "param_value_rules.*.*", "binding.binding.slug_rewrite", "pricing", "litellm_model",
           "allowed_openai_params", "request_defaults.reasoning")
_SKIP = ("provenance", "fingerprint", "plan_version")


@dataclass(frozen=True)
class Explained:
    """One resolved field."""

    path: str
    value: Any
    provenance: Located | None
    #: the field is not in the plan because this layer took it out (a reject a probe found accepted)
    removed: bool = False

    def render(self) -> str:
        value = "(removed)" if self.removed else json.dumps(self.value, sort_keys=True, ensure_ascii=False)
        if self.provenance is None:
            where = "capplan default"
        else:
            where = f"{self.provenance.layer}  {self.provenance.at()}".rstrip()
        return f"{self.path} = {value}\n    set by {where}"


def explain(plan: Plan, field_prefix: str | None = None, lines: LineIndex | None = None) -> list[Explained]:
    """Every field of ``plan`` (or those under ``field_prefix``) with its provenance, located by ``lines``
    (the files the plan was compiled from) at the line each key is on now."""
    index = lines or LineIndex()
    body = plan.body()
    out: list[Explained] = []
    leaves = _leaves(body, "")
    for path, value in leaves:
        if not _wanted(path, field_prefix):
            continue
        prov = _provenance_for(plan.provenance, path)
        out.append(Explained(path, value, index.locate(prov) if prov is not None else None))
    # a rule a measurement lifted has no field left to show: its provenance says who took it out
    for path, prov in sorted(plan.provenance.items()):
        if (prov.layer.startswith(REMOVING_LAYER) and _wanted(path, field_prefix)
                and not any(leaf == path or leaf.startswith(path + ".") for leaf, _ in leaves)):
            out.append(Explained(path, None, index.locate(prov), removed=True))
    return out


#: the layer that can take a field out of a plan (capplan.compiler.probe_evidence)
REMOVING_LAYER = "probe-evidence:"


def _wanted(path: str, field_prefix: str | None) -> bool:
    return not field_prefix or (path == field_prefix or path.startswith(field_prefix + ".")
                                or field_prefix.startswith(path + "."))


def field_paths(plan: Plan) -> list[str]:
    """Every FIELD ``explain`` accepts for ``plan``: each shown field and each subtree above one."""
    paths: set[str] = set()
    for path, _ in _leaves(plan.body(), ""):
        parts = path.split(".")
        paths.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return sorted(paths)


def unknown_field_hint(plan: Plan, field: str) -> str:
    """What to say when ``field`` names nothing in ``plan``: the closest field, else the top-level ones."""
    from capplan.core.diagnostics import did_you_mean

    paths = field_paths(plan)
    close = did_you_mean(field, paths, list_max=0)
    top = sorted(p for p in paths if "." not in p)
    return close or "fields: " + ", ".join(top)


def _atomic(path: str) -> bool:
    if path == "policies.params_policy":  # its flags come from different layers: show each
        return False
    parts = path.split(".")
    for pattern in _ATOMIC:
        pp = pattern.split(".")
        if len(pp) == len(parts) and all(a in ("*", b) for a, b in zip(pp, parts)):
            return True
    return False


def _leaves(node: Any, path: str) -> list[tuple[str, Any]]:
    if path in _SKIP:
        return []
    if isinstance(node, dict) and node and not _atomic(path):
        out = []
        for key in sorted(node):
            out += _leaves(node[key], f"{path}.{key}" if path else key)
        return out
    return [(path, node)]


def _provenance_for(provenance: dict[str, Provenance], path: str) -> Provenance | None:
    # the most specific recorded path at or above this field
    probe = path
    while probe:
        if probe in provenance:
            return provenance[probe]
        probe = probe.rpartition(".")[0]
    return None
