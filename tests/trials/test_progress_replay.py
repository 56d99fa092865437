"""The replay harness's progress uses the trial runner's display: same live line, same redaction rule."""

from __future__ import annotations

import io
from types import SimpleNamespace

from rich.console import Console

from capplan.evals.reasoning_replay import redact
from capplan.evals.reasoning_replay.progress import Progress
from tests.trials.terminal_screen import Screen

LABEL = "openrouter/x-ai/grok-4.7-fast-reasoning-preview · opaque-step-replay · position=late"


def _progress(buffer: io.StringIO, *, terminal: bool, total: int = 4, quiet: bool = False) -> Progress:
    budget = SimpleNamespace(spent=0.25, cap=10.0)
    console = Console(file=buffer, width=80, force_terminal=terminal, color_system=None)
    return Progress(total, 0, budget, quiet=quiet, console=console)  # type: ignore[arg-type]


def test_on_a_terminal_failures_stay_above_the_live_line_and_the_last_cell_is_left_on_screen() -> None:
    buffer = io.StringIO()
    progress = _progress(buffer, terminal=True)
    progress.start()
    progress.cell(f"{LABEL} #1", "done")
    progress.cell(f"{LABEL} #2", "failed", "HTTP 500 from the provider")
    shown = Screen(80).feed(buffer.getvalue()).lines()
    assert shown[0] == "4 cells planned; $0.2500 of $10.00 spent so far"
    assert "".join(shown[1:-1]) == f"[  2/4] $0.2500/$10.00  {LABEL} #2: failed (HTTP 500 from the provider)"
    assert shown[-1].startswith("[  1/4] $0.2500/$10.00  openrouter/") and shown[-1].endswith("…")
    progress.cell(f"{LABEL} #3", "done")
    progress.cell(f"{LABEL} #4", "done")  # the last one: the live line ends, its text stays

    raw = buffer.getvalue()
    screen = Screen(80).feed(raw)
    assert screen.wraps == 0
    shown = screen.lines()
    assert all(len(row) < 80 for row in shown)
    assert not any("#1: done" in row or "#3: done" in row for row in shown)  # live lines leave nothing
    assert "".join(shown[-2:]) == f"[  4/4] $0.2500/$10.00  {LABEL} #4: done"


def test_off_a_terminal_every_cell_is_a_line() -> None:
    buffer = io.StringIO()
    progress = _progress(buffer, terminal=False, total=2)
    progress.start()
    progress.cell(LABEL, "done")
    progress.cell(LABEL, "left", "budget reached")
    assert buffer.getvalue().splitlines() == [
        "2 cells planned; $0.2500 of $10.00 spent so far",
        f"[  1/2] $0.2500/$10.00  {LABEL}: done",
        f"[  2/2] $0.2500/$10.00  {LABEL}: left (budget reached)",
    ]


def test_every_text_passes_the_harness_redactor_live_line_included() -> None:
    canary = "sk-or-v1-canary-0123456789abcdef0123"
    redact.register(canary)
    try:
        for terminal in (True, False):
            buffer = io.StringIO()
            progress = _progress(buffer, terminal=terminal, total=3)
            progress.start()
            progress.cell(f"key {canary}", "done")
            progress.cell(f"key {canary}", "failed", f"401 Incorrect API key provided: {canary}")
            assert canary not in buffer.getvalue() and canary[:12] not in buffer.getvalue()
            assert redact.MASK in buffer.getvalue()
    finally:
        redact.forget_all()


def test_quiet_prints_nothing() -> None:
    buffer = io.StringIO()
    progress = _progress(buffer, terminal=True, total=1, quiet=True)
    progress.start()
    progress.cell(LABEL, "failed", "x")
    assert buffer.getvalue() == ""
