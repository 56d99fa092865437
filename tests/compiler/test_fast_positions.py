"""Overlays and run configs are read by libyaml with their positions recorded while parsing
(core/yaml_fast.py): the data and every key's and item's position must be the careful reader's."""

from __future__ import annotations

from pathlib import Path

import pytest

from capplan.core.diagnostics import InputError
from capplan.core.yaml_fast import LazySource, fast_positioned_source
from capplan.core.yaml_source import source_from_bytes

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted({*ROOT.glob("presets/*.yaml"), *ROOT.glob("tests/compiler/**/*.yaml"), *ROOT.glob("examples/**/*.yaml")})


def _careful(raw: bytes, name: str) -> tuple[object, dict[object, tuple[int, int]]] | None:
    try:
        ref = source_from_bytes(raw, name)
    except InputError:
        return None
    return ref.data, ref.positions


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_same_data_and_positions_as_the_careful_reader(path: Path) -> None:
    raw = path.read_bytes()
    ref = _careful(raw, str(path))
    if ref is None:  # the careful reader refuses it: so does the fast one, with the careful reader's error
        with pytest.raises(InputError):
            fast_positioned_source(raw, str(path))
        return
    src = fast_positioned_source(raw, str(path))
    assert src.data == ref[0]
    for loc, pos in ref[1].items():
        assert src.position(loc) == pos, loc
    src.position(())  # an aliased file computes its positions now
    assert src.positions == ref[1]


@pytest.mark.fast_side
def test_clean_files_are_positioned_without_a_second_parse() -> None:
    src = fast_positioned_source(b"presets:\n  a:\n    match: ['x/*', 'y?']\n", "o.yaml")
    assert isinstance(src, LazySource) and src._positioned
    assert src.positions == {(): (1, 1), ("presets",): (1, 1), ("presets", "a"): (2, 3),
                             ("presets", "a", "match"): (3, 5), ("presets", "a", "match", 0): (3, 13),
                             ("presets", "a", "match", 1): (3, 20)}


def test_keys_are_located_as_the_data_reads_them() -> None:
    # libyaml's own constructor reads `on`/`off` keys as booleans (YAML 1.1); the data keeps the strings
    raw = b"rules:\n  on: 1\n  off: 2\n  2026.3.23: 3\n"
    src = fast_positioned_source(raw, "o.yaml")
    ref = source_from_bytes(raw, "o.yaml")
    assert src.data == ref.data
    assert src.positions == ref.positions
    assert src.position(("rules", "off")) == (3, 3)


@pytest.mark.fast_side
def test_an_alias_gets_positions_on_first_use() -> None:
    raw = b"a: &x\n  - 1\nb: *x\n"
    src = fast_positioned_source(raw, "o.yaml")
    assert isinstance(src, LazySource) and not src._positioned
    assert src.position(("b",)) == source_from_bytes(raw, "o.yaml").position(("b",))
