"""The glob index answers exactly what a scan of every glob answers, whatever the glob shape.

Property tests against brute force (``fnmatchcase`` over every glob of every owner in order) on
random globs — leading, infix and trailing ``*``, ``?``, classes (``[ab]``, ``[!a]``, ``[]a]``,
an unclosed ``[``), literals — and random names, plus the shadowed-preset check against its
pairwise definition.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from hypothesis import given, settings
from hypothesis import strategies as st

from capplan.compiler.matching import GlobIndex, glob_covers, literal_runs, _has_class

_TOKENS = ["a", "b", "A", "/", "-", "ab", "*", "*", "?", "[ab]", "[!a]", "[]a]", "[", "]"]
globs = st.lists(st.sampled_from(_TOKENS), max_size=6).map("".join)
names = st.lists(st.sampled_from(["a", "b", "B", "/", "-", "[", "]"]), max_size=8).map("".join)
owners = st.lists(st.lists(globs, min_size=1, max_size=3), min_size=1, max_size=8)


def brute_first(owned: list[list[str]], text: str, before: int | None = None) -> int | None:
    for position, patterns in enumerate(owned):
        if before is not None and position >= before:
            return None
        if any(fnmatchcase(text.lower(), g.lower()) for g in patterns):
            return position
    return None


@settings(max_examples=150, deadline=None)
@given(owners, st.lists(names, min_size=1, max_size=6), st.one_of(st.none(), st.integers(0, 9)))
def test_first_is_the_scans_first_match(owned: list[list[str]], texts: list[str], before: int | None) -> None:
    index = GlobIndex()
    for position, patterns in enumerate(owned):
        for glob in patterns:
            index.add(position, glob)
    for text in texts + [g for patterns in owned for g in patterns]:
        assert index.first(text, before) == brute_first(owned, text, before), (owned, text, before)


@settings(max_examples=100, deadline=None)
@given(owners, st.lists(names, min_size=1, max_size=6))
def test_stars_only_leaves_out_exactly_the_class_globs(owned: list[list[str]], texts: list[str]) -> None:
    index = GlobIndex()
    for position, patterns in enumerate(owned):
        for glob in patterns:
            index.add(position, glob, stars_only=True)
    kept = [[g for g in patterns if not _has_class(g)] for patterns in owned]
    for text in texts:
        assert index.first(text) == brute_first(kept, text)


@settings(max_examples=150, deadline=None)
@given(globs, names)
def test_every_match_has_the_literal_prefix_suffix_and_runs(glob: str, text: str) -> None:
    head, tail, runs = literal_runs(glob)
    if fnmatchcase(text, glob):
        assert text.startswith(head) and text.endswith(tail) and all(run in text for run in runs)


@settings(max_examples=100, deadline=None)
@given(owners)
def test_shadowed_globs_equals_the_pairwise_definition(owned: list[list[str]]) -> None:
    from capplan.compiler.inputs.preset_file import PresetEntry
    from capplan.compiler.matching import Candidate, shadowed_globs

    candidates = [Candidate(f"p{i}", PresetEntry.model_construct(match=patterns, match_provider=None), None, "overlay")  # type: ignore[arg-type]
                  for i, patterns in enumerate(owned)]
    expected = []
    for i, cand in enumerate(candidates):
        blockers = []
        for glob in cand.entry.match:
            blocker = next((j for j in range(i) for g in candidates[j].entry.match
                            if not _has_class(glob) and glob_covers(g, glob)), None)
            if blocker is None:
                break
            blockers.append((glob, candidates[blocker]))
        else:
            if blockers:
                expected.append((cand.name, blockers[0][0], blockers[0][1].name))
    assert [(c.name, g, b.name) for c, g, b in shadowed_globs(candidates)] == expected


def test_many_leading_star_globs_are_not_scanned_per_lookup() -> None:
    index = GlobIndex()
    for i in range(5000):
        index.add(i, f"*vendor-{i}-model*")
    tested = 0
    import capplan.compiler.matching as matching

    original = matching.star_match

    def counting(text: str, glob: str) -> bool:
        nonlocal tested
        tested += 1
        return original(text, glob)

    matching.star_match = counting
    try:
        assert index.first("openrouter/vendor-4321-model-x") == 4321
    finally:
        matching.star_match = original
    assert tested <= 3  # only the globs whose key the name contains, not 4 322 of them
