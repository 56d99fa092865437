"""The exact markdown, JSON and text of `capplan diff --base` on the scenario repository.

Goldens are written only by ``python -m tests.diff.regen_golden``; digests and commit ids are
masked (see ``scenario.normalise``) so the goldens pin the format, not the bundled data's bytes.
"""

from __future__ import annotations

import re

import pytest

from tests.diff.golden_outputs import produce
from tests.diff.scenario import GOLDEN, GOLDEN_CASES, REGEN


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, str]]:
    return produce(tmp_path_factory.mktemp("golden") / "repo")


def test_every_golden_matches(outputs: dict[str, tuple[int, str]]) -> None:
    missing = [n for n in GOLDEN_CASES if not (GOLDEN / n).is_file()]
    assert not missing, f"missing diff golden(s) {missing}; generate them with: {REGEN}"
    stale = [n for n, (_, text) in outputs.items() if (GOLDEN / n).read_text(encoding="utf-8") != text]
    assert not stale, f"stale diff golden(s) {stale}; review the change, then run: {REGEN}"


def test_no_unused_goldens() -> None:
    unused = sorted(p.name for p in GOLDEN.iterdir() if p.name not in GOLDEN_CASES)
    assert not unused, f"unused diff golden(s) {unused}; {REGEN} deletes them"


def test_golden_cases_exit_1(outputs: dict[str, tuple[int, str]]) -> None:
    assert {name: code for name, (code, _) in outputs.items()} == dict.fromkeys(GOLDEN_CASES, 1)


def test_outputs_are_masked(outputs: dict[str, tuple[int, str]]) -> None:
    """Digests and commit ids never reach a golden; the label still names the base revision."""
    for name, (_, text) in outputs.items():
        assert "HEAD~1 (<first-commit>)" in text, name
        assert not re.search(r"\b[0-9a-f]{12,}\b", text), name
