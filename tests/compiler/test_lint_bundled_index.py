"""`capplan lint presets/*.json`: the bundled parse index is recognised and skipped with a note."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.cli_runner import invoke

PRESETS = Path(__file__).resolve().parents[2] / "presets"


def test_lint_of_the_presets_json_files_passes_and_notes_the_index() -> None:
    result = invoke("lint", *sorted(str(p) for p in PRESETS.glob("*.json")))
    assert result.exit_code == 0, result.output
    assert "bundled_index.json: capplan's parse index of the bundled YAML, not an input file; " \
           "it matches the YAML files beside it" in result.output
    assert "1 file(s) checked: no problems" in result.output


def test_a_stale_or_damaged_index_is_still_only_a_note(tmp_path: Path) -> None:
    shutil.copy(PRESETS / "bundled_index.json", tmp_path / "bundled_index.json")
    (tmp_path / "model_presets.yaml").write_text("presets: {}\n")
    stale = invoke("lint", str(tmp_path / "bundled_index.json"))
    assert stale.exit_code == 0, stale.output
    assert "does not match the YAML files beside it" in stale.output
    (tmp_path / "bundled_index.json").write_bytes(b"\x00not an index")
    damaged = invoke("lint", str(tmp_path / "bundled_index.json"))
    assert damaged.exit_code == 0, damaged.output
    assert "Traceback" not in damaged.output


def test_a_forced_kind_lints_it_as_that_kind() -> None:
    result = invoke("lint", "--kind", "pricing", str(PRESETS / "bundled_index.json"))
    assert result.exit_code == 2
    assert "error[json-syntax]" in result.output
