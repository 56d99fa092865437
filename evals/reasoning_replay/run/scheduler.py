"""Cells: plan them, skip the finished ones, run the rest on a bounded worker pool.

A cell is ``(route, model, step, position)``: a text cell is one position's baseline plus all
its carriers; the opaque cell of a model is turn 1 plus turn 2 at every position. Its state
after each attempt goes to ``cells.jsonl``; a rerun with the same ``--out`` skips cells whose
latest state is final.
"""

from __future__ import annotations

import time
import traceback
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass

from capplan.evals.reasoning_replay import redact
from capplan.evals.reasoning_replay.errors import BudgetExhausted, HarnessError, MissingCredential
from capplan.evals.reasoning_replay.opaque.step import run_opaque_cell
from capplan.evals.reasoning_replay.outcome import CellFailed, CellOutcome
from capplan.evals.reasoning_replay.progress import Progress
from capplan.evals.reasoning_replay.run.context import RunContext
from capplan.evals.reasoning_replay.run.text_step import run_text_cell


@dataclass(frozen=True)
class Cell:
    """One unit of resumable work."""

    route: str
    model: str
    step: str
    position: str

    @property
    def key(self) -> str:
        return f"{self.route}|{self.model}|{self.step}|{self.position}"

    @property
    def label(self) -> str:
        return f"{self.route} {self.model} {self.step}:{self.position}"


def plan(route: str, models: list[str], steps: tuple[str, ...], positions: tuple[str, ...]) -> list[Cell]:
    """Every cell a run over ``models`` consists of, in a stable order."""
    cells: list[Cell] = []
    for model in models:
        if "text" in steps:
            cells += [Cell(route, model, "text", p) for p in positions]
        if "opaque" in steps:
            cells.append(Cell(route, model, "opaque", "all"))
    return cells


def record_state(ctx: RunContext, cell: Cell, outcome: CellOutcome) -> None:
    """Append the cell's state; the latest line for a cell key wins."""
    ctx.client.out.cells.append({
        "t": round(time.time(), 3), "run": ctx.client.run_id, "cell": cell.key,
        "route": cell.route, "model": cell.model, "step": cell.step, "position": cell.position,
        "state": outcome.state, "final": outcome.final, "reason": outcome.reason})


def run_cells(ctx: RunContext, cells: list[Cell], workers: int, progress: Progress) -> dict[str, CellOutcome]:
    """Run ``cells`` with at most ``workers`` at once; returns each cell's outcome by key."""
    outcomes: dict[str, CellOutcome] = {}
    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="cell") as pool:
        futures = {pool.submit(_execute, ctx, cell): cell for cell in cells}
        try:
            for future in as_completed(futures):
                cell, outcome = futures[future], future.result()
                outcomes[cell.key] = outcome
                progress.cell(cell.label, outcome.state, outcome.reason)
        except KeyboardInterrupt:
            ctx.stop("interrupted; rerun the same command to resume", "not-started")
            pool.shutdown(wait=True, cancel_futures=True)
            raise
    return outcomes


def _execute(ctx: RunContext, cell: Cell) -> CellOutcome:
    if ctx.stop_reason:
        outcome = CellOutcome(ctx.stop_state, final=False, reason=ctx.stop_reason)
    else:
        outcome = _attempt(ctx, cell)
    record_state(ctx, cell, outcome)
    return outcome


def _attempt(ctx: RunContext, cell: Cell) -> CellOutcome:
    try:
        if cell.step == "text":
            return run_text_cell(ctx, cell.model, cell.position, cell.key)
        return run_opaque_cell(ctx, cell.model, cell.key)
    except BudgetExhausted as exc:
        ctx.stop(str(exc), "budget-exhausted")
        return CellOutcome("budget-exhausted", final=False, reason=str(exc))
    except MissingCredential as exc:
        ctx.stop(str(exc), "baseline-failed")
        return CellOutcome("baseline-failed", final=False, reason=str(exc))
    except CellFailed as failure:
        return failure.outcome
    except Exception as exc:  # a defect here must cost one cell, not the run or its records
        _log_internal_error(ctx, cell, exc)
        return CellOutcome("error", final=False,
                           reason=f"internal error {type(exc).__name__}: {exc}; see errors.log")


def _log_internal_error(ctx: RunContext, cell: Cell, exc: Exception) -> None:
    text = "".join(traceback.format_exception(exc))
    try:
        ctx.client.out.append_text("errors.log", redact.scrub(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} {cell.key}\n{text}\n"))
    except HarnessError:
        pass  # the cell state still says what happened
