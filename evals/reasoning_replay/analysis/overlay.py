"""A capplan overlay snippet: every measured verdict as dated evidence.

The snippet is YAML with one ``reasoning_replay:`` block, route → model → lane, each entry
holding the verdict, the per-carrier result at each position, and an ``evidence`` sentence
with the date and the deltas, in the form capplan's overlays use for measured claims.
Scalars are written as JSON strings, which YAML reads unchanged.
"""

from __future__ import annotations

import json
import time
from typing import Any

from capplan.evals.reasoning_replay.analysis.signals import CONSUMED_FRACTION

PHRASES = {"consumed": "consumed", "ignored": "accepted and ignored", "partial": "partly read",
           "rejected": "rejected", "error": "errored", "no-usage": "answered without usage",
           "no-baseline": "had no baseline"}


def render(table: list[dict[str, Any]], meta: dict[str, Any], route_as: str | None = None) -> str:
    """The snippet text for every measured row of ``table``.

    capplan applies an entry to the plans of the provider key it is filed under, so ``route_as``
    files every row under that key (the harness's ``custom`` route means nothing to capplan).
    """
    today = time.strftime("%Y-%m-%d", time.gmtime())
    t = meta["trace_tokens"]
    lines = [
        "# capplan overlay snippet: reasoning-replay consumption measured on the wire.",
        f"# From {meta['out']} on {today}; T = {t:.0f} trace tokens; consumed = text delta "
        f">= {CONSUMED_FRACTION * t:.0f}, opaque verbatim delta > 25.",
        "# Review, then merge the entries you trust into an operator overlay (--presets-file); capplan",
        "# then replays reasoning only where it was measured to be read (docs/replay.md).",
        "reasoning_replay:",
    ]
    nested: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for row in table:
        if row["verdict"] != "not-measured":
            nested.setdefault(route_as or row["route"], {}).setdefault(row["model"], []).append(row)
    if not nested:
        lines[-1] = "reasoning_replay: {}"
    for route, models in nested.items():
        lines.append(f"  {_q(route)}:")
        for model, model_rows in models.items():
            lines.append(f"    {_q(model)}:")
            for row in model_rows:
                lines += _entry(row, t)
    return "\n".join(lines) + "\n"


def _entry(row: dict[str, Any], t: float) -> list[str]:
    date = row.get("measured_on") or time.strftime("%Y-%m-%d", time.gmtime())
    lines = [f"      {_q(row['lane'])}:",
             f"        verdict: {_q(row['verdict'])}",
             f"        measured: {_q(date)}",
             f"        complete: {'true' if row['complete'] else 'false'}"]
    if row.get("fingerprint"):
        lines.append(f"        fingerprint: {_q(row['fingerprint'])}")
    if row.get("tool_choice") and row["tool_choice"] != "auto":
        lines.append(f"        tool_choice: {_q(row['tool_choice'])}")
    carriers: dict[str, dict[str, str]] = {}
    for cell in row["cells"]:
        name = cell["variant"] if cell["step"] == "text" else f"opaque:{cell['variant']}"
        carriers.setdefault(name, {})[cell["position"]] = _result(cell)
    if carriers:
        lines.append("        carriers:")
        for name, positions in carriers.items():
            inner = ", ".join(f"{p}: {_q(v)}" for p, v in positions.items())
            lines.append(f"          {_q(name)}: {{{inner}}}")
    lines.append(f"        evidence: {_q(_evidence(row, date, t))}")
    return lines


def _result(cell: dict[str, Any]) -> str:
    if cell["delta"] is not None:
        return f"{cell['class']} {cell['delta']:+d}"
    return f"{cell['class']} {cell['status']}" if cell["class"] in ("rejected", "error") else cell["class"]


def _evidence(row: dict[str, Any], date: str, t: float) -> str:
    by_carrier: dict[str, list[str]] = {}
    for cell in row["cells"]:
        what = cell["variant"] if cell["step"] == "text" else f"real {cell['variant']} replay"
        amount = (f"{cell['delta']:+d}" if cell["delta"] is not None
                  else f"HTTP {cell['status']}" if cell["status"] else cell["class"])
        by_carrier.setdefault(what, []).append(
            f"{PHRASES.get(cell['class'], cell['class'])} {cell['position'].replace('_', '-')} ({amount})")
    head = (f"{date}, {row['route']} route, {row['lane']} lane, {row['model']}: "
            f"{row['verdict']}; prompt-token deltas vs T={t:.0f}")
    body = "; ".join(f"{what} {' and '.join(parts)}" for what, parts in by_carrier.items())
    return f"{head}: {body or '; '.join(row['notes']) or 'no carrier measured'}"


def _q(value: str) -> str:
    return json.dumps(str(value), ensure_ascii=False)
