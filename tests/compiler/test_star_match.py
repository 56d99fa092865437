"""Globs whose only wildcard is ``*`` are matched without a regex, exactly as fnmatch matches them."""

from __future__ import annotations

from fnmatch import fnmatchcase

from hypothesis import given, settings
from hypothesis import strategies as st

from capplan.compiler.matching import glob_match, star_match

TEXT = st.text(alphabet="ab/-.\n", max_size=12)
STAR_GLOB = st.text(alphabet="ab/-.\n*", max_size=10)
ANY_GLOB = st.text(alphabet="ab/-.*?[]!", max_size=10)


@settings(max_examples=3000, deadline=None)
@given(TEXT, STAR_GLOB)
def test_star_match_is_fnmatchcase(text: str, glob: str) -> None:
    assert star_match(text, glob) == fnmatchcase(text, glob)


@settings(max_examples=1000, deadline=None)
@given(TEXT, ANY_GLOB)
def test_glob_match_is_fnmatchcase_for_any_glob(text: str, glob: str) -> None:
    assert glob_match(text, glob) == fnmatchcase(text, glob)


def test_the_cases_that_matter_for_presets() -> None:
    cases = [
        ("claude-opus-4.7", "claude*", True), ("claude-opus-4.7", "*opus*", True),
        ("anthropic/claude-opus-4.7", "*claude-opus-4.7", True), ("claude-opus-4.7", "*claude-opus-4.7*", True),
        ("gpt-4o", "gpt-4o", True), ("gpt-4o-mini", "gpt-4o", False), ("a", "a*a", False), ("aa", "a*a", True),
        ("", "*", True), ("", "", True), ("x", "", False), ("ab", "a**b", True), ("abab", "*ab*ab", True),
        ("aXbXc", "a*b*c", True), ("acb", "a*b*c", False),
    ]
    for text, glob, expected in cases:
        assert star_match(text, glob) is expected, (text, glob)
        assert fnmatchcase(text, glob) is expected, (text, glob)
