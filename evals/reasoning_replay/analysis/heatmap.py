"""``heatmap.svg``: verdicts at a glance, model × carrier × position, coloured by cell class.

Rows are (route, model, lane); column groups are step × position, one column per carrier;
the last column is the row's verdict. Each cell shows its delta (or status) and carries a
tooltip with the details.
"""

from __future__ import annotations

from typing import Any
from xml.sax.saxutils import escape

from capplan.evals.reasoning_replay.analysis.matrix_md import SHORT
from capplan.evals.reasoning_replay.fixture import POSITIONS

CLASS_COLOURS = {"consumed": "#1a9850", "partial": "#fee08b", "ignored": "#d9d9d9",
                 "rejected": "#d73027", "error": "#9e6ebd", "no-usage": "#9e6ebd",
                 "no-baseline": "#9e6ebd"}
# baseline-failed is the model's own failure, not a carrier's: its own colour, never the error one
VERDICT_COLOURS = {"consumes-all-turns": "#1a9850", "in-loop-only": "#91cf60",
                   "accepted-ignored": "#d9d9d9", "rejected": "#d73027",
                   "baseline-failed": "#4a4a4a", "direct-lane-not-reached": "#fdae61",
                   "not-measured": "#ffffff"}
VERDICT_TEXT = {"baseline-failed": "#ffffff"}  # readable on the dark fill
UNMEASURED_FILL, UNMEASURED_STROKE = "#ffffff", "#bbbbbb"
CELL_W, CELL_H, VERDICT_W, HEAD_H, PAD = 58, 24, 170, 58, 10
CHAR_W = 7  # a generous width per character of 11 px sans-serif
LEGEND_ITEM_W = 90
FOOTNOTE = ("numbers: prompt-token delta vs the same-lane, same-wording baseline; * = cells still to run; "
            "a blank cell was not measured (matrix.md notes say why)")


Column = tuple[str, str, str]  # step, position, variant
Placed = tuple[Column, int, int]  # column, x, width


def render(table: list[dict[str, Any]], title: str) -> str:
    """The SVG document for ``table`` (the rows of matrix.json)."""
    label_w = max([len(_label(r)) for r in table] + [20]) * CHAR_W + PAD
    columns = _layout(_columns(table), label_w)
    verdict_x = columns[-1][1] + columns[-1][2] + 4 if columns else label_w
    # the legend and footnote are part of the picture: the width covers them too
    width = max(verdict_x + VERDICT_W + 2 * PAD, _legend_width())
    height = HEAD_H + CELL_H * max(1, len(table)) + 20 + LEGEND_H
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<text x="{PAD}" y="16" font-size="13" font-weight="bold">{escape(title)}</text>']
    out += _header(columns, verdict_x)
    for i, row in enumerate(table):
        out += _row(row, columns, verdict_x, HEAD_H + i * CELL_H)
    out += _legend(HEAD_H + CELL_H * max(1, len(table)) + 20)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _columns(table: list[dict[str, Any]]) -> list[Column]:
    seen: dict[Column, None] = {}
    for step in ("text", "opaque"):
        for position in POSITIONS:
            for row in table:
                for cell in row["cells"]:
                    if cell["step"] == step and cell["position"] == position:
                        seen.setdefault((step, position, cell["variant"]), None)
    return list(seen)


def _label(row: dict[str, Any]) -> str:
    if row.get("lanes") is False:  # one endpoint: the id's shape says nothing about a lane
        return f"{row['route']} · {row['model']}"
    return f"{row['route']} · {row['model']} · {row['lane']}"


def _layout(columns: list[Column], x0: int) -> list[Placed]:
    """x and width of each column; a group is widened until its heading fits over it."""
    groups: dict[tuple[str, str], list[Column]] = {}
    for column in columns:
        groups.setdefault(column[:2], []).append(column)
    placed: list[Placed] = []
    x = x0
    for (step, position), members in groups.items():
        heading = len(f"{step} {position}") * 7 + 8
        width = max(CELL_W, -(-heading // len(members)))
        for column in members:
            placed.append((column, x, width))
            x += width
        x += 6  # a gap between groups
    return placed


def _header(columns: list[Placed], verdict_x: int) -> list[str]:
    out = []
    groups: dict[tuple[str, str], list[Placed]] = {}
    for placed in columns:
        groups.setdefault(placed[0][:2], []).append(placed)
    for (step, position), members in groups.items():
        x, end = members[0][1], members[-1][1] + members[-1][2]
        out.append(f'<text x="{x + 2}" y="{HEAD_H - 26}" font-weight="bold">'
                   f'{escape(step)} {escape(position)}</text>')
        out.append(f'<line x1="{x}" y1="{HEAD_H - 22}" x2="{end - 4}" y2="{HEAD_H - 22}" stroke="#555"/>')
    for (_, _, variant), x, _ in columns:
        out.append(f'<text x="{x + 2}" y="{HEAD_H - 6}">{escape(SHORT.get(variant, variant))}</text>')
    out.append(f'<text x="{verdict_x + 4}" y="{HEAD_H - 6}" font-weight="bold">verdict</text>')
    return out


def _row(row: dict[str, Any], columns: list[Placed], verdict_x: int, y: int) -> list[str]:
    out = [f'<text x="{PAD}" y="{y + 16}">{escape(_label(row))}</text>']
    cells = {(c["step"], c["position"], c["variant"]): c for c in row["cells"]}
    for column, x, w in columns:
        cell = cells.get(column)
        if cell is None:
            out.append(f'<rect x="{x}" y="{y}" width="{w - 2}" height="{CELL_H - 2}" '
                       f'fill="{UNMEASURED_FILL}" stroke="{UNMEASURED_STROKE}" stroke-dasharray="3,2">'
                       f'<title>{escape(" ".join(column))}: not measured</title></rect>')
            continue
        text = f"{cell['delta']:+d}" if cell["delta"] is not None else str(cell["status"] or cell["class"])
        tip = f"{column[0]} {column[1]} {column[2]}: {cell['class']} {text} {cell.get('error') or ''}"
        out.append(f'<rect x="{x}" y="{y}" width="{w - 2}" height="{CELL_H - 2}" '
                   f'fill="{CLASS_COLOURS.get(cell["class"], "#ffffff")}">'
                   f'<title>{escape(tip.strip())}</title></rect>')
        out.append(f'<text x="{x + 4}" y="{y + 16}">{escape(text[:8])}</text>')
    verdict = row["verdict"] + ("" if row["complete"] else " *")
    out.append(f'<rect x="{verdict_x}" y="{y}" width="{VERDICT_W - 4}" height="{CELL_H - 2}" '
               f'fill="{VERDICT_COLOURS.get(row["verdict"], "#ffffff")}" stroke="#999"/>')
    colour = VERDICT_TEXT.get(row["verdict"], "#000000")
    out.append(f'<text x="{verdict_x + 4}" y="{y + 16}" fill="{colour}">{escape(verdict)}</text>')
    return out


CELL_KEYS = ("consumed", "partial", "ignored", "rejected", "error")
LEGEND_H = 84


def _legend_width() -> int:
    cells = PAD + (len(CELL_KEYS) + 1) * LEGEND_ITEM_W
    verdicts = PAD + sum(_verdict_key_w(v) for v in VERDICT_COLOURS)
    return max(cells, verdicts, PAD + len(FOOTNOTE) * CHAR_W) + PAD


def _verdict_key_w(name: str) -> int:
    return 16 + len(name) * CHAR_W + 14


def _legend(y: int) -> list[str]:
    """Three lines: cell classes (and the blank unmeasured cell), verdicts, the footnote."""
    out, x = [f'<text x="{PAD}" y="{y - 4}" font-weight="bold">cells</text>'], PAD
    y += 4
    for name in CELL_KEYS:
        out.append(f'<rect x="{x}" y="{y}" width="12" height="12" fill="{CLASS_COLOURS[name]}"/>')
        out.append(f'<text x="{x + 16}" y="{y + 10}">{name}</text>')
        x += LEGEND_ITEM_W
    out.append(f'<rect x="{x}" y="{y}" width="12" height="12" fill="{UNMEASURED_FILL}" '
               f'stroke="{UNMEASURED_STROKE}" stroke-dasharray="3,2"/>')
    out.append(f'<text x="{x + 16}" y="{y + 10}">not measured</text>')
    y += 30
    out.append(f'<text x="{PAD}" y="{y - 4}" font-weight="bold">verdicts</text>')
    x = PAD
    for name, fill in VERDICT_COLOURS.items():
        out.append(f'<rect x="{x}" y="{y}" width="12" height="12" fill="{fill}" stroke="#999"/>')
        out.append(f'<text x="{x + 16}" y="{y + 10}">{name}</text>')
        x += _verdict_key_w(name)
    out.append(f'<text x="{PAD}" y="{y + 32}">{escape(FOOTNOTE)}</text>')
    return out
