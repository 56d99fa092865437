"""``capplan policies``: every registered policy by slot, with its declared parameters."""

from __future__ import annotations

import json
from typing import Any

import click

from capplan.cli.common import format_option


def catalogue() -> dict[str, Any]:
    """``{"slots": {slot: [{name, class, default, doc, params: [...]}, …]}}`` from the registry."""
    from capplan.executor.policy_params import describe
    from capplan.executor.registry import DEFAULT_POLICY, SLOTS, policy_class, policy_targets

    slots: dict[str, list[dict[str, Any]]] = {}
    for slot in SLOTS:
        rows = []
        for name, target in sorted(policy_targets()[slot].items()):
            cls = policy_class(slot, name)
            rows.append({"name": name, "class": target, "default": DEFAULT_POLICY.get(slot) == name,
                         "doc": (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else "",
                         "params": describe(cls)})
        slots[slot] = rows
    return {"format": "capplan-policies", "version": 1, "slots": slots}


def render_text(data: dict[str, Any]) -> str:
    """Slot headings, one line per policy, one indented line per parameter."""
    lines: list[str] = []
    for slot, rows in data["slots"].items():
        lines.append(f"{slot}:")
        for row in rows:
            mark = " (default)" if row["default"] else ""
            lines.append(f"  {row['name']}{mark} — {row['doc']}")
            for p in row["params"]:
                default = "required" if p["required"] else f"default {json.dumps(p['default'])}"
                bounds = f" ({', '.join(p['constraints'])})" if p["constraints"] else ""
                lines.append(f"      {p['name']}: {p['type']}{bounds}, {default} — {p['description']}")
        lines.append("")
    return "\n".join(lines).rstrip("\n")


@click.command("policies")
@format_option("text", "json")
def policies_cmd(fmt: str) -> None:
    """List every registered policy by slot, with its parameters, types, defaults and docs.

    Third-party policies registered through the `capplan.policies` entry-point group are listed
    beside the built-in ones. A slot is set in a preset or overlay by name, or as
    `{name: NAME, params: {...}}` with the parameters listed here.

    \b
      capplan policies                   # readable
      capplan policies --format json     # {"format": "capplan-policies", "version": 1, "slots": {...}}
    """
    data = catalogue()
    if fmt == "json":
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))  # slots in plan order
    else:
        click.echo(render_text(data))
