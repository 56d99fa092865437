"""The exact McNemar test, the verdict line, and the text made safe for terminals and markdown."""

from __future__ import annotations

from fractions import Fraction
from itertools import product
from math import comb

from capplan.trials.report.stats import compare_pairs, mcnemar_exact
from capplan.trials.safe_text import md_cell, md_table, plain


def brute_force_p(b: int, c: int) -> float:
    """Two-sided: the probability, under p = 1/2, of every split at least as uneven as (b, c)."""
    n = b + c
    if n == 0:
        return 1.0
    observed = abs(b - c)
    total = sum(Fraction(comb(n, k), 2**n) for k in range(n + 1) if abs(k - (n - k)) >= observed)
    return float(min(Fraction(1), total))


def test_exact_mcnemar_equals_the_binomial_enumeration() -> None:
    for b, c in product(range(0, 16), repeat=2):
        assert abs(mcnemar_exact(b, c) - brute_force_p(b, c)) < 1e-12, (b, c)
        assert mcnemar_exact(b, c) == mcnemar_exact(c, b)


def test_known_values() -> None:
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(11, 1) == 26 / 4096          # 2 · (C(12,0) + C(12,1)) / 2^12
    assert mcnemar_exact(0, 10) == 2 / 1024
    assert mcnemar_exact(5, 5) == 1.0
    assert mcnemar_exact(600, 400) < 1e-9             # exact for large counts too (no overflow, no approximation)


def test_verdicts_name_the_better_plan_or_say_nothing_shows() -> None:
    b_better = compare_pairs("A", "B", [(False, True)] * 12 + [(True, True)] * 188)
    assert b_better.verdict() == "B better than A: +6 pp, p < 0.001, 200 paired tasks"
    a_better = compare_pairs("A", "B", [(True, False)] * 11 + [(False, True)])
    assert a_better.verdict() == "A better than B: +83 pp, p = 0.006, 12 paired tasks"
    even = compare_pairs("A", "B", [(True, False), (False, True), (True, True)])
    assert even.verdict() == "B vs A: no difference detectable (+0 pp, p = 1.000, 3 paired tasks)"
    trials = compare_pairs("A", "B", [(True, False)] * 3, one_trial_per_task=False)
    assert "no difference detectable" in trials.verdict() and "paired trials" in trials.verdict()
    assert compare_pairs("A", "B", []).verdict() == "B vs A: no paired graded trials to compare"


def test_plain_removes_escapes_and_controls() -> None:
    assert plain("\x1b[31mred\x1b[0m") == "red"
    assert plain("a\x1b]0;set title\x07b") == "ab"
    assert plain("line\nbreak\ttab\x00nul\x7f\u202eevil") == "line break tabnulevil"
    assert plain("\x9b2Jx") == "x"


def test_markdown_cells_keep_their_columns() -> None:
    assert md_cell("we|ird \\ pack\x1b[2J") == "we\\|ird \\\\ pack"
    header, rule, row = md_table(["a", "b"], [["x|y\n", "\x1b[1mz"]])
    assert row == "| x\\|y  | z |"
    assert len(row.replace("\\|", "").split("|")) == len(header.split("|"))
