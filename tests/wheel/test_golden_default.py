"""Golden plans default to the project the command runs in, never to where capplan is installed."""

from __future__ import annotations

from pathlib import Path

import pytest

from capplan.compiler.golden import default_golden_dir
from capplan.core.diagnostics import InputError
from tests.cli_runner import invoke


def test_the_default_is_golden_plans_of_the_nearest_git_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    assert default_golden_dir() == tmp_path.resolve() / "golden" / "plans"


def test_update_then_check_use_the_current_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    written = invoke("compile", "--model", "mock-echo", "--update-golden")
    assert written.exit_code == 0, written.output
    assert (tmp_path / "golden" / "plans" / "mock-echo.json").is_file()
    checked = invoke("compile", "--model", "mock-echo", "--check")
    assert checked.exit_code == 0, checked.output
    assert str(tmp_path.resolve() / "golden" / "plans") in checked.output


def test_a_root_inside_site_packages_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    inside = tmp_path / "lib" / "site-packages" / "somewhere"
    inside.mkdir(parents=True)
    monkeypatch.chdir(inside)
    with pytest.raises(InputError) as caught:
        default_golden_dir()
    assert caught.value.diagnostics[0].code == "golden-in-installed-package"
    result = invoke("compile", "--model", "mock-echo", "--update-golden")
    assert result.exit_code == 2
    assert "error[golden-in-installed-package]" in result.output
    assert "Traceback" not in result.output
    assert not (inside / "golden").exists()
