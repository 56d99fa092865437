"""Bundled data read through libyaml is the data ruamel reads, at the same positions."""

from __future__ import annotations

from pathlib import Path

import pytest

from capplan.compiler.loading import bundled_dir
from capplan.core.yaml_source import read_bundled, read_source

BUNDLED_YAML = sorted(p.name for p in bundled_dir().glob("*.yaml"))


@pytest.mark.parametrize("name", BUNDLED_YAML)
def test_both_readers_give_the_same_data(name: str) -> None:
    path = bundled_dir() / name
    fast, careful = read_bundled(path, f"bundled:{name}"), read_source(path, f"bundled:{name}")
    assert fast.data == careful.data and fast.sha256 == careful.sha256
    assert fast.positions == careful.positions and len(fast.positions) > 10


def test_an_unreadable_file_gets_the_careful_readers_located_error(tmp_path: Path) -> None:
    from capplan.core.diagnostics import InputError

    bad = tmp_path / "model_presets.yaml"
    bad.write_text("presets: [\n")
    with pytest.raises(InputError):
        read_bundled(bad, "bundled:model_presets.yaml")
