"""Every malformed input gets located, one-line-per-problem diagnostics; goldens hold the exact text."""

from __future__ import annotations

from pathlib import Path

import pytest

from capplan.core.diagnostics import InputError
from capplan.compiler.loading import load_inputs
from tests.compiler.expected_errors import REGEN, cases, expected_path, lint_output, render
from tests.cli_runner import invoke


@pytest.mark.parametrize("rel", cases(), ids=lambda p: p.stem)
def test_lint_output_matches_expected_golden(rel: Path) -> None:
    golden = expected_path(rel)
    assert golden.is_file(), f"missing expected-error golden {golden.name}; generate it with: {REGEN}"
    code, output = lint_output(rel)
    assert render(code, output) == golden.read_text(encoding="utf-8"), f"stale golden; review, then: {REGEN}"
    assert "Traceback" not in output


@pytest.mark.parametrize("rel", cases(), ids=lambda p: p.stem)
def test_every_bad_input_is_reported_located(rel: Path) -> None:
    code, output = lint_output(rel)
    assert code in (1, 2)
    *problems, summary = [line for line in output.splitlines() if not line.startswith("    hint:")]
    assert problems, "a bad input must produce at least one finding"
    assert summary.startswith("capplan lint: 1 file(s) checked: ")
    for line in problems:
        file, line_no, col, rest = line.split(":", 3)
        assert file == str(rel) and int(line_no) >= 1 and int(col) >= 1
        assert rest.lstrip().startswith(("error[", "warning["))


def test_errors_are_collected_not_first_only() -> None:
    code, output = lint_output(Path("tests/compiler/bad_inputs/unknown_policy.yaml"))
    assert code == 2
    assert output.count("error[unknown-policy]") == 4
    assert "did you mean 'gemini_recursive'?" in output
    assert "did you mean 'anthropic'?" in output


def test_missing_file_is_an_input_error_not_a_traceback(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        load_inputs(data_dir=None, run_config=tmp_path / "nope.yaml", overlays=[])
    assert info.value.diagnostics[0].code == "file-not-found"
    assert str(tmp_path / "nope.yaml") in info.value.diagnostics[0].render()


def test_missing_file_on_the_command_line_exits_2(tmp_path: Path) -> None:
    result = invoke("compile", "--config", str(tmp_path / "nope.yaml"), "--out", str(tmp_path / "o"))
    assert result.exit_code == 2
    assert "error[file-not-found]" in result.output
    assert not (tmp_path / "o").exists()
