"""The guard's work per reply is linear in the reply, whatever the reply contains.

Shown without a clock: every regular expression the detectors compile is walked, and each must
bound the work it can do from one start position (no unbounded repeat, and nested bounded
repeats whose product stays small), which is what rules out catastrophic backtracking. The
adversarial corpus of ``benchmarks/guard_worst_case.py`` is then run through the guard to show it
answers every reply; that script reports the wall-clock figures.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path
from re import _constants as sre_constants  # type: ignore[attr-defined]
from re import _parser as sre_parser  # type: ignore[attr-defined]
from types import ModuleType
from typing import Any

import pytest

from capplan.trials.usersim.guard import UserReplyGuard

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "guard_worst_case.py"
DETECTOR_MODULES = (
    "capplan.trials.usersim.detectors.fourth_wall",
    "capplan.trials.usersim.detectors.scratchpad",
    "capplan.trials.usersim.detectors.context",
)
# The most characters one match attempt may consume per repeat nesting path. The detectors'
# largest today is 64 (a bounded run of leading blanks).
MAX_WORK_PER_START = 1024
_REPEATS = (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT, sre_constants.POSSESSIVE_REPEAT)


def load_benchmark() -> ModuleType:
    spec = importlib.util.spec_from_file_location("guard_worst_case", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def detector_patterns() -> Iterator[tuple[str, re.Pattern[str]]]:
    for name in DETECTOR_MODULES:
        module = importlib.import_module(name)
        # patterns a detector compiles on first use rather than at import
        lazy = getattr(module, "compiled_patterns", None)
        for attr, pattern in (lazy() if lazy is not None else {}).items():
            yield f"{name}.{attr}", pattern
        for attr, value in vars(module).items():
            values = value if isinstance(value, tuple) else (value,)
            for item in values:
                if isinstance(item, re.Pattern):
                    yield f"{name}.{attr}", item


def work_per_start(tree: Any) -> int:
    """Upper bound on the repeat iterations one match attempt can nest (unbounded → huge)."""
    worst = 1
    for op, arg in tree:
        if op in _REPEATS:
            _low, high, sub = arg
            bound = 10**12 if high == sre_constants.MAXREPEAT else high
            worst = max(worst, bound * work_per_start(sub))
        elif op == sre_constants.SUBPATTERN:
            worst = max(worst, work_per_start(arg[-1]))
        elif op == sre_constants.BRANCH:
            worst = max([worst, *(work_per_start(branch) for branch in arg[1])])
        elif op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
            worst = max(worst, work_per_start(arg[1]))
        elif op == sre_constants.ATOMIC_GROUP:
            worst = max(worst, work_per_start(arg))
    return worst


def test_the_detectors_compile_patterns_to_check() -> None:
    assert len(list(detector_patterns())) > 20


@pytest.mark.parametrize("label, pattern", list(detector_patterns()), ids=lambda v: str(v)[:60])
def test_every_pattern_bounds_its_work_per_start_position(label: str, pattern: re.Pattern[str]) -> None:
    tree = sre_parser.parse(pattern.pattern, pattern.flags)
    assert work_per_start(tree) <= MAX_WORK_PER_START, f"{label}: {pattern.pattern[:120]}"


def test_the_bound_catches_a_backtracking_pattern() -> None:
    # The check itself must be able to fail.
    assert work_per_start(sre_parser.parse(r"(a+)+b", 0)) > MAX_WORK_PER_START
    assert work_per_start(sre_parser.parse(r"(?:\s{1,64}){1,64}x", 0)) > MAX_WORK_PER_START


def test_every_adversarial_10kb_reply_gets_a_verdict() -> None:
    benchmark = load_benchmark()
    guard = UserReplyGuard()
    replies = list(benchmark.corpus(10 * 1024))
    assert len(replies) > 300
    for _label, text in replies:
        guard.inspect(text)


def test_benchmark_reports_against_the_target(capsys: pytest.CaptureFixture[str]) -> None:
    benchmark = load_benchmark()
    # A quick run of the real reporting path.
    setattr(benchmark, "SIZES", {"10 KB": 1024})  # noqa: B010
    assert benchmark.main(["--repeat", "1", "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert "worst" in out and "5 ms target" in out
