"""capplan's requests against tolokaforge 0.29.0's recorded kwargs, case by case, field by field.

Every difference must be listed in docs/deviations.md, and every listed deviation must still
occur. Fixtures: golden/upstream/, written only by tools/upstream_oracle.py (see parity.py).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.upstream import parity


@pytest.fixture(scope="module")
def comparison(tmp_path_factory: pytest.TempPathFactory) -> Iterator[parity.Comparison]:
    logging.disable(logging.WARNING)
    try:
        yield parity.compare(tmp_path_factory.mktemp("parity"))
    finally:
        logging.disable(logging.NOTSET)


@pytest.fixture(scope="module")
def deviations() -> list[parity.Deviation]:
    return parity.load_deviations(parity.DEVIATIONS.read_text(encoding="utf-8"))


def test_every_catalogue_model_variant_and_conversation_was_compared(comparison: parity.Comparison) -> None:
    per_model = len(parity.cases.VARIANTS) * len(parity.cases.CONVERSATIONS)
    assert comparison.compared > per_model * 15  # 20 models, minus the tool-only / OpenRouter-only cells
    assert comparison.equal > 0


def test_every_difference_is_a_listed_deviation(comparison: parity.Comparison,
                                                deviations: list[parity.Deviation]) -> None:
    unlisted, _, _ = parity.match_deviations(comparison.differences, deviations)
    assert not unlisted, (
        f"{len(unlisted)} difference(s) from tolokaforge 0.29.0 that docs/deviations.md does not list "
        "(fix capplan, or add an entry saying why capplan's request is better):\n" + parity.summary(unlisted)
    )


def test_every_listed_deviation_still_occurs(comparison: parity.Comparison,
                                             deviations: list[parity.Deviation]) -> None:
    _, _, stale = parity.match_deviations(comparison.differences, deviations)
    assert not stale, "docs/deviations.md lists differences that no longer occur; remove them:\n" + "\n".join(stale)


def test_every_entry_names_its_reason_and_reference(deviations: list[parity.Deviation]) -> None:
    assert deviations
    for dev in deviations:
        assert len(dev.reason) > 80, dev.ident
        assert "Covers" in dev.reason or dev.ident == "D1", f"{dev.ident} says which issue row it covers"


def test_fixtures_are_only_the_oracle_s(comparison: parity.Comparison) -> None:
    recorded = set(parity.upstream_fixtures())
    assert recorded == set(parity.catalogue()), "golden/upstream/ has fixtures for models the catalogue lacks"
    manifest = (parity.FIXTURES / "MANIFEST.json").read_text(encoding="utf-8")
    assert '"tolokaforge": "0.29.0"' in manifest and '"litellm": "1.110.2"' in manifest


# --- the comparison itself can fail: a planted difference is caught at its path --------------


def test_a_difference_is_reported_at_the_most_specific_path() -> None:
    up = {"kwargs": {"extra_body": {"reasoning": {"effort": "low"}}, "messages": [{"role": "user", "content": "a"}]}}
    mine = {"kwargs": {"extra_body": {"reasoning": {"effort": "low"}, "provider": {"x": 1}},
                       "messages": [{"role": "user", "content": "b"}], "timeout": 1.0}}
    paths = [d.path for d in parity.diff_results("m", "v/c", up, mine)]
    assert paths == ["extra_body.provider.x", "messages[0].content", "timeout"]
    assert parity.diff_results("m", "v/c", {"error": {"type": "E"}}, {"error": {"type": "F"}}) == []
    assert [d.path for d in parity.diff_results("m", "v/c", {"error": {"type": "E"}}, mine)] == ["error"]
    # 1 and 1.0 are different JSON on the wire
    assert [d.path for d in parity.diff_results("m", "v/c", {"kwargs": {"t": 1}}, {"kwargs": {"t": 1.0}})] == ["t"]


def test_listing_rules_catch_unlisted_and_stale_entries() -> None:
    text = """
## D1 one
- **fields**: `messages[*].reasoning_details`
- **models**: `a`, `b`
- **why**: because.
"""
    (dev,) = parity.load_deviations(text)
    hit = parity.Difference("a", "v/c", "messages[2].reasoning_details", None, [])
    miss = parity.Difference("c", "v/c", "messages[2].reasoning_details", None, [])
    other = parity.Difference("a", "v/c", "messages[2].reasoning_detailsX", None, [])
    unlisted, hits, stale = parity.match_deviations([hit, miss, other], [dev])
    assert unlisted == [miss, other] and hits["D1"] == [hit]
    assert stale == ["D1 (one): no longer occurs for b"]
    with pytest.raises(ValueError, match="D2 lacks why"):
        parity.load_deviations("## D2 x\n- **fields**: `a`\n- **models**: `*`\n")


def test_a_stale_case_digest_names_the_oracle_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fixtures = parity.upstream_fixtures()
    key = sorted(fixtures)[0]
    case = sorted(fixtures[key])[0]
    fixtures[key][case] = {**fixtures[key][case], "case_digest": "0" * 64}
    monkeypatch.setattr(parity, "upstream_fixtures", lambda: fixtures)
    with pytest.raises(AssertionError, match="tools/upstream_oracle.py"):
        parity.compare(tmp_path)
