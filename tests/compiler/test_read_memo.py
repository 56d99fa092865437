"""Reading the same small file twice parses it once; every reader still gets its own data."""

from __future__ import annotations

from pathlib import Path

import pytest

from capplan.core import yaml_source
from capplan.core.diagnostics import InputError
from capplan.core.yaml_source import read_source


@pytest.mark.fast_side
def test_a_second_read_is_an_independent_copy_of_the_same_parse(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "o.yaml"
    path.write_text("presets:\n  p:\n    match: ['a-*']\n", encoding="utf-8")
    first = read_source(path)
    first.data["presets"]["p"]["match"].append("edited")
    parses: list[str] = []
    monkeypatch.setattr(yaml_source, "_parse", lambda text, name: parses.append(name) or (None, {}))
    second = read_source(path)
    assert parses == []  # served from the memo
    assert second.data == {"presets": {"p": {"match": ["a-*"]}}}
    assert second.positions == first.positions and second.positions is not first.positions
    assert second.sha256 == first.sha256


def test_changed_bytes_and_bad_files_are_parsed_again(tmp_path: Path) -> None:
    path = tmp_path / "o.yaml"
    path.write_text("presets: {}\n", encoding="utf-8")
    assert read_source(path).data == {"presets": {}}
    path.write_text("litellm_models: {}\n", encoding="utf-8")
    assert read_source(path).data == {"litellm_models": {}}
    path.write_text("a: [\n", encoding="utf-8")
    for _ in range(2):
        with pytest.raises(InputError) as info:
            read_source(path)
        assert info.value.diagnostics[0].code == "yaml-syntax"
