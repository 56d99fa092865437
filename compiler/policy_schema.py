"""The policy slots of the preset and overlay JSON Schemas, listing every registered policy.

pydantic sees a slot as "a name or {name, params}"; an editor is more use when it knows the
names a slot takes and each policy's parameters, so the generated schema is rewritten here
from the registry and each policy's declared ``Params``.
"""

from __future__ import annotations

from typing import Any

from capplan.compiler.inputs.preset_file import SLOT_KEYS
from capplan.executor.policy_params import params_model
from capplan.executor.registry import policy_class, registered_names

#: Schema definitions whose properties are the policy slots.
SLOT_HOLDERS = ("PresetBody", "PresetEntry")


def enumerate_policies(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with each slot property replaced by the slot's names and parameters."""
    defs = schema.get("$defs", {})
    holders = [defs[name] for name in SLOT_HOLDERS if name in defs]
    if not holders:
        return schema
    for slot in SLOT_KEYS:
        defs[f"Slot.{slot}"] = {"anyOf": _slot_choices(slot, defs)}
        for holder in holders:
            prop = holder.get("properties", {}).get(slot)
            if prop is not None:
                kept = {k: v for k, v in prop.items() if k != "anyOf"}
                holder["properties"][slot] = {**kept, "$ref": f"#/$defs/Slot.{slot}"}
    return schema


def _slot_choices(slot: str, defs: dict[str, Any]) -> list[dict[str, Any]]:
    names = registered_names(slot)
    out: list[dict[str, Any]] = [{"enum": names, "description": f"A {slot} policy by name (`capplan policies`)."}]
    for name in names:
        params = params_model(policy_class(slot, name)).model_json_schema()
        defs.update(params.pop("$defs", {}))
        ref = f"Params.{slot}.{name}"
        defs[ref] = params
        out.append({
            "type": "object",
            "additionalProperties": False,
            "required": ["name"],
            "properties": {"name": {"const": name}, "params": {"$ref": f"#/$defs/{ref}"}},
        })
    out.append({"type": "null"})
    return out
