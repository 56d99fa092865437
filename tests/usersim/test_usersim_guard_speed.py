"""The guard answers in time linear in the reply, over the benchmark's adversarial corpus.

The bound is deliberately loose (ten times the 5 ms target for a 10 KB reply): this test is
here to catch catastrophic backtracking, which costs seconds, not to measure; the benchmark
in ``benchmarks/guard_worst_case.py`` reports the actual figures.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path
from types import ModuleType

import pytest

from executor.usersim.guard import UserReplyGuard

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "guard_worst_case.py"


def load_benchmark() -> ModuleType:
    spec = importlib.util.spec_from_file_location("guard_worst_case", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_adversarial_10kb_replies_are_inspected_quickly() -> None:
    benchmark = load_benchmark()
    guard = UserReplyGuard()
    slow = []
    replies = list(benchmark.corpus(10 * 1024))
    assert len(replies) > 300
    for label, text in replies:
        started = time.perf_counter()
        guard.inspect(text)
        elapsed_ms = (time.perf_counter() - started) * 1000
        if elapsed_ms > 50:
            # One retry: a single scheduler stall on a shared machine is not backtracking.
            started = time.perf_counter()
            guard.inspect(text)
            elapsed_ms = (time.perf_counter() - started) * 1000
        if elapsed_ms > 50:
            slow.append(f"{label}: {elapsed_ms:.1f} ms")
    assert slow == []


@pytest.mark.parametrize("size", [10 * 1024, 100 * 1024])
def test_time_grows_linearly_with_a_repeated_near_match(size: int) -> None:
    # Ten times the text must cost about ten times as much, not a hundred.
    guard = UserReplyGuard()
    unit = "I'm not a real customer, this is a "

    def best_ms(length: int) -> float:
        text = (unit * (length // len(unit) + 1))[:length]
        runs = []
        for _ in range(3):
            started = time.perf_counter()
            guard.inspect(text)
            runs.append(time.perf_counter() - started)
        return min(runs) * 1000

    small, large = best_ms(size // 10), best_ms(size)
    assert large < max(30 * small, 5.0), (small, large)


def test_benchmark_reports_against_the_target(capsys: pytest.CaptureFixture[str]) -> None:
    benchmark = load_benchmark()
    # A quick run of the real reporting path.
    setattr(benchmark, "SIZES", {"10 KB": 1024})  # noqa: B010
    assert benchmark.main(["--repeat", "1", "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert "worst" in out and "5 ms target" in out
