"""The `requires_capplan` gate decides plain releases itself, exactly as packaging would."""

from __future__ import annotations

import itertools
import re
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

from capplan.compiler.version_gate import BadSpecifier, _admits_plain, admits, installed_version
from tests.cli_runner import invoke

RELEASES = ["0", "0.1", "0.1.0", "0.1.1", "0.2", "1", "1.0", "1.0.0", "1.0.1", "1.10", "2.0.0.0", "10.0"]
OPERATORS = [">=", "<=", "==", "!=", "<", ">"]


@pytest.mark.parametrize("version", RELEASES)
def test_every_plain_clause_agrees_with_packaging(version: str) -> None:
    for op, release in itertools.product(OPERATORS, RELEASES):
        for text in (f"{op}{release}", f" {op} {release} "):
            assert _admits_plain(text, version) == SpecifierSet(text).contains(version, prereleases=True), text


def test_ranges_agree_with_packaging() -> None:
    for version in RELEASES:
        for low, high in itertools.product(RELEASES, repeat=2):
            text = f">={low},<{high}"
            assert admits(text, version) == SpecifierSet(text).contains(version, prereleases=True), (text, version)


@pytest.mark.parametrize(("spec", "version", "expected"), [
    ("~=0.1", "0.1.5", True),        # compatible release: packaging's
    ("==0.1.*", "0.1.5", True),      # wildcard: packaging's
    (">=0.1", "0.2.0rc1", True),     # a pre-release of capplan: packaging's, pre-releases admitted
    ("<0.2", "0.2.0rc1", False),     # PEP 440: <V excludes V's pre-releases
    (">0.1", "0.1.post1", False),    # PEP 440: >V excludes V's post-releases
    ("", "0.1.0", True),
])
def test_everything_else_is_packagings_answer(spec: str, version: str, expected: bool) -> None:
    assert admits(spec, version) is expected
    assert admits(spec, version) == SpecifierSet(spec).contains(version, prereleases=True)


def test_plain_path_leaves_what_it_cannot_read_to_packaging() -> None:
    for spec in ["~=0.1", "==0.1.*", ">=0.1a1", "===0.1", ">=٠.1", ">=0.1,", "0.1", ">=0..1"]:
        assert _admits_plain(spec, "0.1.0") is None, spec
    assert _admits_plain(">=0.1", "0.1.0rc1") is None


@pytest.mark.parametrize("spec", ["bogus", ">=", "=>0.1", ">=0.1;<1"])
def test_text_that_is_no_specifier_is_refused(spec: str) -> None:
    with pytest.raises(BadSpecifier):
        admits(spec, "0.1.0")


def test_installed_version_is_the_distributions() -> None:
    from importlib.metadata import version

    assert installed_version() == version("capplan")


def _capplan_dist(site: Path, folder: str, metadata: bytes) -> None:
    (site / folder).mkdir(parents=True)
    (site / folder / "METADATA").write_bytes(metadata)


@pytest.mark.parametrize("reference", [False, True])
def test_the_version_read_is_the_one_importlib_reads_along_sys_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     reference: bool) -> None:
    from importlib.metadata import version

    first, second = tmp_path / "first", tmp_path / "second"
    _capplan_dist(second, "capplan-7.0.dist-info", b"Metadata-Version: 2.1\nName: capplan\nVersion: 7.0\n")
    _capplan_dist(first, "CapPlan-9.1.2.dist-info", b"Metadata-Version: 2.1\nName: CapPlan\nVersion: 9.1.2\n\nVersion: 0\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "absent"), str(first), str(second), *sys.path])
    monkeypatch.setattr("capplan.core.entry_points.reference_mode", lambda: reference)
    assert installed_version() == version("capplan") == "9.1.2"


def test_metadata_without_a_version_line_is_asked_of_importlib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib.metadata import version

    site = tmp_path / "site"
    _capplan_dist(site, "capplan-3.0.egg-info", b"Metadata-Version: 2.1\nName: capplan\n")
    (site / "capplan-3.0.egg-info" / "METADATA").unlink()
    (site / "capplan-3.0.egg-info" / "PKG-INFO").write_bytes(b"Metadata-Version: 1.0\nName: capplan\n")
    monkeypatch.setattr(sys, "path", [str(site), *sys.path])
    # whatever importlib makes of it, the same: "None" from the standard library's distribution, a
    # KeyError from the importlib_metadata backport's where an earlier import put its finder in charge
    assert _outcome(installed_version) == _outcome(lambda: str(version("capplan")))


def _outcome(read: Callable[[], str]) -> tuple[str, object]:
    try:
        return "read", read()
    except Exception as exc:  # noqa: BLE001 - the comparison is of what each side raises
        return "raised", type(exc)


def test_metadata_that_is_not_utf8_fails_as_importlib_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    _capplan_dist(site, "capplan-1.0.dist-info", b"Metadata-Version: 2.1\nName: capplan\nVersion: 1.\xff\n")
    monkeypatch.setattr(sys, "path", [str(site), *sys.path])
    with pytest.raises(UnicodeDecodeError):
        installed_version()


def test_a_malformed_requires_capplan_is_a_located_error(tmp_path: Path) -> None:
    presets = tmp_path / "model_presets.yaml"
    presets.write_text('requires_capplan: "=>0.1"\npresets: {}\n', encoding="utf-8")
    result = invoke("lint", str(presets))
    assert result.exit_code == 2, result.output
    assert f"{presets}:1:1: error[wrong-type]: requires_capplan: not a version specifier: '=>0.1'" in result.output


def _bundled_copy(tmp_path: Path, requires_line: str) -> Path:
    """A --data folder: the bundled data with the presets' `requires_capplan` line replaced."""
    import shutil

    from capplan.presets import data_dir

    data = tmp_path / "data"
    shutil.copytree(data_dir(), data, ignore=shutil.ignore_patterns("__pycache__", "*.py", "bundled_index.json"))
    presets = data / "model_presets.yaml"
    text = presets.read_text(encoding="utf-8")
    assert 'requires_capplan: ">=0.1,<1"\n' in text
    presets.write_text(text.replace('requires_capplan: ">=0.1,<1"\n', requires_line), encoding="utf-8")
    return data


@pytest.mark.parametrize(("requires_line", "expected"), [
    # wrong type: a number, a list
    ("requires_capplan: 5\n", "error[wrong-type]: requires_capplan"),
    ("requires_capplan: ['>=0.1']\n", "error[wrong-type]: requires_capplan"),
    # huge: 40 000 plain clauses, one of which refuses this capplan; then as many broken ones
    ('requires_capplan: "' + ",".join([">=0.1"] * 40_000 + ["<0.0.1"]) + '"\n', "error[engine-version]: requires_capplan"),
    ('requires_capplan: "' + ",".join(["=>0.1"] * 40_000) + '"\n', "error[wrong-type]: requires_capplan: not a version specifier"),
    # truncated: an operator with no version, an unterminated string
    ('requires_capplan: ">="\n', "error[wrong-type]: requires_capplan: not a version specifier"),
    ('requires_capplan: ">=0.1\n', "error[yaml-syntax]"),  # YAML locates where the string ran on
    # planted: a key inside the specifier's place that is no specifier at all
    ("requires_capplan: {__class__: x}\n", "error[wrong-type]: requires_capplan"),
])
def test_a_bad_requires_capplan_is_located_exit_2_and_writes_nothing(
        tmp_path: Path, requires_line: str, expected: str) -> None:
    data = _bundled_copy(tmp_path, requires_line)
    presets = data / "model_presets.yaml"
    out = tmp_path / "plans"
    for args in (["lint", str(presets)], ["compile", "--data", str(data), "--out", str(out)]):
        result = invoke(*args)
        assert result.exit_code == 2, (args, result.output)
        assert "Traceback" not in result.output, result.output[-2000:]
        assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
        # located: the file, the line the key sits on (where YAML gave up, for the broken string)
        line = r"\d+" if "yaml-syntax" in expected else "13"
        assert re.search(rf"^{re.escape(str(presets))}:{line}:\d+: {re.escape(expected)}", result.output, re.M), \
            (args, result.output[-2000:])
    assert not out.exists(), "a plan folder was written"
