"""``matrix.md``: one table row per (route, model, lane), deltas written out per carrier."""

from __future__ import annotations

from typing import Any

from capplan.evals.reasoning_replay.analysis.signals import CONSUMED_FRACTION, OPAQUE_MIN_DELTA
from capplan.evals.reasoning_replay.fixture import POSITIONS

SHORT = {"reasoning_content": "rc", "reasoning": "r", "reasoning_details": "rd", "all": "all",
         "summary_item": "sum", "content_item": "cnt", "thought_part": "thought",
         "verbatim": "verb", "dummy_signature": "dummy", "verbatim+all_turns": "verb+ctx"}

HEADER = ("| route | model | lane | in-loop text Δ | cross-turn text Δ | opaque in-loop Δ "
          "| opaque cross-turn Δ | turn-1 carriers | canary (in-loop / cross-turn) | verdict | notes |")


def render(meta: dict[str, Any], table: list[dict[str, Any]]) -> str:
    """The whole markdown document."""
    t = meta["trace_tokens"]
    lines = [
        "# Reasoning-replay consumption matrix", "",
        f"Folder `{meta['out']}` · {meta['runs']} run(s) · seed {meta['seed']} · canary "
        f"`{meta['canary']}` · T = {t:.0f} tokens · spent ${meta['spent']:.4f}", "",
        f"Consumed: text delta ≥ {CONSUMED_FRACTION}·T = {CONSUMED_FRACTION * t:.0f} tokens; "
        f"opaque verbatim delta > {OPAQUE_MIN_DELTA}. A number is the prompt-token delta against "
        f"the same-lane, same-wording baseline; a bare status (400) means the carrier was "
        f"rejected with it.", "",
        HEADER, "|" + "---|" * (HEADER.count("|") - 1),
    ]
    for row in table:
        lines.append("| " + " | ".join(_escape(c) for c in _cells(row)) + " |")
    if meta["problems"]:
        lines += ["", "## Problems met while reading the folder", ""]
        lines += [f"- {p}" for p in meta["problems"]]
    lines += ["", "Canary: Y = word in the answer, r = only in the returned reasoning, "
              "n = not recalled (a negative is not conclusive).", ""]
    return "\n".join(lines)


def _cells(row: dict[str, Any]) -> list[str]:
    by: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for cell in row["cells"]:
        by.setdefault((cell["step"], cell["position"]), []).append(cell)
    if row.get("lanes") is False:
        lane = "- (one endpoint)"  # no lanes to tell apart: the id's shape would only mislead
    else:
        lane = row["lane"] + (f" ({', '.join(row['id_prefixes'])})" if row["id_prefixes"] else "")
    verdict = row["verdict"] + ("" if row["complete"] else " (incomplete)")
    # reasons a cell was not measured come last in the notes; they are never cut off
    kept = [n for n in row["notes"] if " not measured: " in n]
    others = [n for n in row["notes"] if " not measured: " not in n][:max(0, 4 - len(kept))]
    return [row["route"], row["model"], lane,
            *[_deltas(by.get((step, p), [])) for step in ("text", "opaque") for p in POSITIONS],
            _turn1(row.get("turn1")), _canary(by), verdict, "; ".join(others + kept) or "-"]


def _deltas(cells: list[dict[str, Any]]) -> str:
    if not cells:
        return "-"
    parts = []
    for cell in cells:
        name = SHORT.get(cell["variant"], cell["variant"])
        if cell["delta"] is not None:
            parts.append(f"{name}={cell['delta']:+d}")
        elif cell["class"] in ("rejected", "error"):
            parts.append(f"{name}={cell['status']}")
        else:
            parts.append(f"{name}={cell['class']}")
    return " ".join(parts)


def _canary(by: dict[tuple[str, str], list[dict[str, Any]]]) -> str:
    halves = []
    for position in POSITIONS:
        cells = [c for c in by.get(("text", position), []) if c["canary"]]
        halves.append(" ".join(f"{SHORT.get(c['variant'], c['variant'])}:{c['canary']}" for c in cells) or "-")
    return " / ".join(halves)


def _turn1(turn1: dict[str, Any] | None) -> str:
    if not turn1:
        return "-"
    text = f"{turn1.get('status')} {','.join(sorted(set(turn1.get('carriers') or []))) or 'none'}"
    if turn1.get("detail_formats"):
        text += " " + ";".join(turn1["detail_formats"])
    if turn1.get("signed"):
        text += f" signed={turn1['signed']}"
    if turn1.get("effort"):
        text += f" effort={turn1['effort']}"
    return text


def _escape(text: str) -> str:
    return str(text).replace("|", "/").replace("\n", " ")
