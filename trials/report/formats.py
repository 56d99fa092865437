"""A :class:`~capplan.trials.report.compare.Comparison` as markdown, JSON or CSV.

Markdown is also what the terminal shows, so every name in it goes through
:mod:`capplan.trials.safe_text` (no escape sequence or control character survives, pipes
are escaped). The statistics columns are :func:`capplan.trials.run_folder.summary.row_cells`, the same
cells ``summary.md`` is made of. CSV holds one row per trial; a text cell that a spreadsheet
would run as a formula (``=``, ``+``, ``-``, ``@`` first) is prefixed with a quote.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any, Literal

from capplan.trials.outcome import PASS_RULE
from capplan.trials.report.compare import Comparison
from capplan.trials.report.run_data import TrialResult
from capplan.trials.safe_text import md_table, plain
from capplan.trials.run_folder.summary import ROW_ALIGN, ROW_HEADER, row_cells

Format = Literal["md", "json", "csv"]
FORMATS: tuple[Format, ...] = ("md", "json", "csv")


def render(comparison: Comparison, fmt: Format) -> str:
    if fmt == "json":
        return render_json(comparison)
    if fmt == "csv":
        return render_csv(comparison)
    return render_markdown(comparison)


def _short(fingerprint: str) -> str:
    return f"{fingerprint[:16]}…" if len(fingerprint) > 16 else fingerprint or "—"


def _cell(trials: list[TrialResult]) -> str:
    """A matrix cell: passes over graded trials, then what else happened (errors, aborts…)."""
    if not trials:
        return ""
    graded = [t for t in trials if t.graded]
    parts = [f"{sum(1 for t in graded if t.passed)}/{len(graded)}" if graded else "—"]
    others: dict[str, int] = {}
    for t in trials:
        if t.outcome in ("error", "aborted", "interrupted", "ungraded"):
            others[t.outcome] = others.get(t.outcome, 0) + 1
    parts += [f"{n} {outcome}" for outcome, n in others.items()]
    return " · ".join(parts)


def render_markdown(c: Comparison) -> str:
    lines = ["# Trial report", ""]
    lines += md_table(["run", "run id", "started", "ended", "trials", "folder"],
                      [[run.label, run.run_id or "—", run.manifest.started_at or "—", run.manifest.ended_at or "—",
                        str(len(run.trials)), str(run.path)] for run in c.runs], align="llllrl")
    lines += [""]
    lines += md_table(["column", "run", "model", "plan fingerprint", "effective preset"],
                      [[col.label, col.run, col.plan_key, _short(col.fingerprint),
                        ", ".join(col.effective_presets) or "—"] for col in c.columns])
    lines += ["", f"## By {c.by}", ""]
    if c.by == "model":
        lines += md_table(["column", *ROW_HEADER], [[g.column, *row_cells(g.stats)] for g in c.groups],
                          align="l" + ROW_ALIGN)
    else:
        lines += md_table([c.by, "column", *ROW_HEADER], [[g.group, g.column, *row_cells(g.stats)] for g in c.groups],
                          align="ll" + ROW_ALIGN)
    labels = [col.label for col in c.columns]
    lines += ["", "## Per-task matrix", "",
              "Each cell: trials passed / graded, then trials that were not graded and why.", ""]
    lines += md_table(["task pack", "task", *labels],
                      [[pack, task, *(_cell(cells.get(label, [])) for label in labels)]
                       for (pack, task), cells in c.matrix.items()], align="ll" + "r" * len(labels))
    if c.pairs:
        lines += ["", f"## Paired comparison (exact McNemar test, against {plain(c.columns[0].label)})", ""]
        lines += [f"- {plain(p.verdict())}" for p in c.pairs]
    if c.notes:
        lines += ["", "## Notes", ""] + [f"- {plain(note)}" for note in c.notes]
    lines += ["", "Pass rates count graded trials and harness errors (as not passed); aborted and interrupted trials "
              "are left out. Pairs are joined on (task id, trial index).", ""]
    lines += [PASS_RULE, ""]
    return "\n".join(lines)


def comparison_json(c: Comparison) -> dict[str, Any]:
    return {
        "format": "capplan-trial-report",
        "version": 1,
        "by": c.by,
        "runs": [{"label": run.label, "path": str(run.path), "run_id": run.run_id,
                  "started_at": run.manifest.started_at, "ended_at": run.manifest.ended_at,
                  "plans": run.plans, "trials": len(run.trials)} for run in c.runs],
        "columns": [{"label": col.label, "run": col.run, "run_id": col.run_id, "plan_key": col.plan_key,
                     "plan_fingerprint": col.fingerprint, "effective_presets": list(col.effective_presets)}
                    for col in c.columns],
        "groups": [{"group": g.group, "column": g.column, **g.stats.model_dump(mode="json")} for g in c.groups],
        "matrix": [{"task_pack": pack, "task_id": task,
                    "cells": {label: [{"index": t.index, "outcome": t.outcome, "passed": t.passed,
                                       "termination_reason": t.termination_reason} for t in trials]
                              for label, trials in cells.items()}}
                   for (pack, task), cells in c.matrix.items()],
        "comparisons": [p.as_json() for p in c.pairs],
        "notes": list(c.notes),
    }


def render_json(c: Comparison) -> str:
    return json.dumps(comparison_json(c), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


CSV_COLUMNS = ["run", "run_id", "column", "plan_key", "plan_fingerprint", "effective_preset", "user_plan_fingerprint",
               "task_pack", "task_id", "task_sha256", "index", "attempt", "outcome", "status", "termination_reason",
               "counts_against_model", "passed", "cost_usd", "user_cost_usd", "total_tokens", "user_total_tokens",
               "turns", "n_calls", "latency_s", "dir", "cost_known_usd", "user_cost_known_usd"]


def _csv_value(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, str):
        text = plain(value)
        return f"'{text}" if text[:1] in ("=", "+", "-", "@") else text
    return value


def render_csv(c: Comparison) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for col in c.columns:
        for trial in col.trials:
            row = {**trial.as_row(), "column": col.label}
            writer.writerow([_csv_value(row.get(name)) for name in CSV_COLUMNS])
    return out.getvalue()


# -- the terminal ---------------------------------------------------------------------------------
#
# On a TTY the report is shown as tables at the terminal's width (rich), from the same Markdown the
# other outputs print: headings, paragraphs, bullets and the pipe tables ``md_table`` writes. A table
# whose columns cannot fit side by side is shown one record per block (column name: value), so a
# cell is never cut to "…". Every text goes to rich as ``Text``, never as markup: a task called
# "[red]x" is shown as it is.

#: the least width a column may get when a table is drawn side by side
_MIN_COLUMN = 6


def _md_cells(line: str) -> list[str]:
    """The cells of one ``| a | b\\|c |`` row, pipes and backslashes unescaped as ``md_cell`` escaped them."""
    cells: list[str] = []
    current: list[str] = []
    chars = iter(line.strip()[1:])
    for char in chars:
        if char == "\\":
            current.append(next(chars, ""))
        elif char == "|":
            cells.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    return cells


def _table_lines(lines: list[str]) -> tuple[list[str], list[list[str]], list[str]]:
    """Header, rows and per-column justification of a pipe table's lines."""
    header = _md_cells(lines[0])
    marks = _md_cells(lines[1]) if len(lines) > 1 else []
    justify = ["right" if m.endswith(":") and not m.startswith(":") else "left" for m in marks]
    justify += ["left"] * (len(header) - len(justify))
    rows = [_md_cells(line) for line in lines[2:]]
    return header, [row + [""] * (len(header) - len(row)) for row in rows], justify


def _terminal_table(lines: list[str], width: int) -> list[Any]:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    header, rows, justify = _table_lines(lines)
    natural = [max([len(h) for h in header[i:i + 1]] + [len(r[i]) for r in rows]) for i in range(len(header))]
    side_by_side = sum(min(max(n, _MIN_COLUMN), 24) + 3 for n in natural) + 1 <= width
    if side_by_side or len(header) <= 2:
        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, expand=False)
        for name, how in zip(header, justify):
            table.add_column(Text(name), justify=how, overflow="fold")  # type: ignore[arg-type]
        for row in rows:
            table.add_row(*(Text(cell) for cell in row))
        return [table]
    # too many columns for this width: one block per row, the first cell as its title
    out: list[Any] = []
    for row in rows:
        block = Table(box=box.SIMPLE, show_header=False, show_edge=False, pad_edge=False,
                      title=Text(f"{header[0]}: {row[0]}", style="bold"), title_justify="left")
        block.add_column(overflow="fold", style="dim")
        block.add_column(overflow="fold")
        for name, cell in zip(header[1:], row[1:]):
            block.add_row(Text(name), Text(cell))
        out += [block, Text("")]
    return out


def terminal_renderables(markdown: str, width: int) -> list[Any]:
    """What the terminal shows for ``markdown`` (a report or a summary) at ``width`` columns, as rich renderables."""
    from rich.text import Text

    out: list[Any] = []
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("|"):
            block = []
            while i < len(lines) and lines[i].startswith("|"):
                block.append(lines[i])
                i += 1
            out += _terminal_table(block, width)
            continue
        if line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            out.append(Text(line[level:].strip(), style="bold underline" if level == 1 else "bold"))
        elif line.strip():
            out.append(Text(line))
        else:
            out.append(Text(""))
        i += 1
    return out


def render_terminal(markdown: str, width: int, *, color: bool = False) -> str:
    """``markdown`` as the terminal shows it at ``width`` columns (no colour unless asked): what tests read."""
    import io as _io

    from rich.console import Console

    buffer = _io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=color, color_system="standard" if color else None,
                      highlight=False, emoji=False, markup=False, soft_wrap=False)
    for renderable in terminal_renderables(markdown, width):
        console.print(renderable)
    return buffer.getvalue()
