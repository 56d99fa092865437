"""The paired comparison of two plans over the same trials: the exact McNemar test and its verdict.

Two plans run on the same tasks give paired outcomes per (task id, trial index). Only the
discordant pairs say anything about which plan is better: ``b`` pairs where A passed and B
did not, ``c`` where B passed and A did not. Under "no difference" each discordant pair is a
fair coin, so the two-sided p-value is the exact binomial tail ``2 · P(X ≤ min(b, c))`` for
``X ~ Binomial(b + c, 1/2)``, capped at 1. It is computed with integers, exactly, for any
number of pairs (no normal approximation, no scipy).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

#: the significance level of the verdict line
ALPHA = 0.05


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for ``b`` and ``c`` discordant pairs (1.0 when there are none)."""
    if b < 0 or c < 0:
        raise ValueError("discordant pair counts cannot be negative")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1))
    return float(min(Fraction(1), Fraction(2 * tail, 2**n)))


@dataclass(frozen=True)
class PairedComparison:
    """Plan B against plan A over the pairs where both were graded."""

    a: str
    b: str
    pairs: int
    a_passed: int
    b_passed: int
    only_a: int  # A passed, B did not
    only_b: int  # B passed, A did not
    p_value: float
    #: whether every pair is trial 0 of its task (then a pair is a task)
    one_trial_per_task: bool = True

    @property
    def difference_pp(self) -> float:
        """B's pass rate minus A's over the pairs, in percentage points."""
        return 100.0 * (self.b_passed - self.a_passed) / self.pairs if self.pairs else 0.0

    @property
    def significant(self) -> bool:
        return self.pairs > 0 and self.p_value < ALPHA

    def verdict(self) -> str:
        """One line: who is better, by how much, how sure, over how many pairs — or that nothing shows."""
        unit = "paired tasks" if self.one_trial_per_task else "paired trials (task, trial index)"
        if self.pairs == 0:
            return f"{self.b} vs {self.a}: no paired graded trials to compare"
        figures = f"{self.difference_pp:+.0f} pp, {_p(self.p_value)}, {self.pairs} {unit}"
        if not self.significant:
            return f"{self.b} vs {self.a}: no difference detectable ({figures})"
        better, worse = (self.b, self.a) if self.only_b > self.only_a else (self.a, self.b)
        if better == self.a:
            figures = f"{-self.difference_pp:+.0f} pp, {_p(self.p_value)}, {self.pairs} {unit}"
        return f"{better} better than {worse}: {figures}"

    def as_json(self) -> dict[str, object]:
        return {"a": self.a, "b": self.b, "pairs": self.pairs, "a_passed": self.a_passed, "b_passed": self.b_passed,
                "only_a_passed": self.only_a, "only_b_passed": self.only_b,
                "difference_pp": round(self.difference_pp, 9), "p_value": self.p_value,
                "test": "exact McNemar (two-sided binomial on discordant pairs)", "significant": self.significant,
                "alpha": ALPHA, "verdict": self.verdict()}


def _p(value: float) -> str:
    return "p < 0.001" if value < 0.001 else f"p = {value:.3f}"


def compare_pairs(a: str, b: str, outcomes: list[tuple[bool, bool]], *, one_trial_per_task: bool = True
                  ) -> PairedComparison:
    """The comparison of ``outcomes``: one (A passed, B passed) per pair."""
    only_a = sum(1 for x, y in outcomes if x and not y)
    only_b = sum(1 for x, y in outcomes if y and not x)
    return PairedComparison(a=a, b=b, pairs=len(outcomes), a_passed=sum(1 for x, _ in outcomes if x),
                            b_passed=sum(1 for _, y in outcomes if y), only_a=only_a, only_b=only_b,
                            p_value=mcnemar_exact(only_a, only_b), one_trial_per_task=one_trial_per_task)
