"""JSON Schemas of every input format and the plan, generated from the pydantic models."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from capplan.core.canonical import canonical_bytes

#: file stem -> "module:Model"
SCHEMAS: dict[str, str] = {
    "preset-file": "capplan.compiler.inputs.preset_file:PresetFile",
    "overlay": "capplan.compiler.inputs.overlay_file:OverlayFile",
    "providers": "capplan.compiler.inputs.providers_file:ProvidersFile",
    "pricing": "capplan.compiler.inputs.pricing_file:PricingFile",
    "run-config": "capplan.compiler.inputs.run_config:RunConfig",
    "plan": "capplan.executor.plan:Plan",
    "manifest": "capplan.compiler.manifest:Manifest",
    "request": "capplan.executor.messages:ChatRequest",
    "task": "capplan.trials.tasks.taskfile:TaskFile",
    "trajectory": "capplan.trials.run_folder.records:Trajectory",
    "metrics": "capplan.trials.run_folder.records:Metrics",
    "run-line": "capplan.trials.run_folder.records:RunLine",
    "trial-summary": "capplan.trials.run_folder.records:Summary",
    "probe-census": "capplan.trials.run_folder.probe_census:ProbeCensus",
    "project": "capplan.core.project_file:ProjectFile",
}


def schema_dir() -> Path:
    """``schemas/`` of the checkout capplan runs from."""
    return Path(__file__).resolve().parents[1] / "schemas"


def generate(name: str) -> dict[str, Any]:
    """The JSON Schema for ``name``."""
    module, _, attr = SCHEMAS[name].partition(":")
    model = getattr(importlib.import_module(module), attr)
    schema: dict[str, Any] = model.model_json_schema(by_alias=True)
    if name in ("preset-file", "overlay"):
        from capplan.compiler.policy_schema import enumerate_policies

        schema = enumerate_policies(schema)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"https://capplan.dev/schemas/{name}.schema.json"
    return schema


def rendered() -> dict[str, bytes]:
    """File name -> canonical bytes, for every schema."""
    out = {}
    for name in SCHEMAS:
        out[f"{name}.schema.json"] = canonical_bytes(generate(name))
    return out
