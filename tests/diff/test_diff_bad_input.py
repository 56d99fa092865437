"""Bad input to `capplan diff`: a clear message on stderr, exit 2, never a traceback."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from capplan.executor.plan import PLAN_VERSION

from tests.diff.conftest import Outcome, invoke
from tests.diff.plans import catalogue_bytes, write_catalogue

PLAN = "gpt-4o"


@pytest.fixture
def plans(tmp_path: Path) -> Path:
    """A folder of the catalogue's plans."""
    return write_catalogue(tmp_path / "plans")


def refused(*args: str) -> Outcome:
    out = invoke("diff", *args)
    assert out.code == 2, out
    assert out.stdout == ""
    return out


def test_nonexistent_file_or_folder(plans: Path, tmp_path: Path) -> None:
    out = refused(str(tmp_path / "missing.json"), str(plans / f"{PLAN}.json"))
    assert f"{tmp_path / 'missing.json'}: no such file or folder" in out.stderr
    out = refused(str(plans), str(tmp_path / "gone"))
    assert "gone: no such file or folder" in out.stderr


def test_folder_with_a_non_plan_json_names_the_file(plans: Path) -> None:
    (plans / "notes.json").write_text('{"title": "not a plan"}\n')
    out = refused(str(plans), str(plans))
    assert f"{plans / 'notes.json'}: not a plan file (a JSON object without plan_version / fingerprint)" in out.stderr


def test_folder_with_invalid_json_says_where(plans: Path) -> None:
    (plans / "broken.json").write_text('{"plan_version": 1,\n  oops}\n')
    out = refused(str(plans), str(plans))
    assert "broken.json: not a plan file (invalid JSON at line 2, column 3" in out.stderr


def test_binary_file(plans: Path, tmp_path: Path) -> None:
    blob = tmp_path / "plan.json"
    blob.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    out = refused(str(blob), str(plans / f"{PLAN}.json"))
    assert "plan.json: binary file, not a plan (plans are UTF-8 JSON)" in out.stderr
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"name": "caf\xe9"}')
    assert "not a plan file (not UTF-8 text)" in refused(str(latin), str(plans / f"{PLAN}.json")).stderr


def test_tampered_plan_is_reported_and_not_diffed(plans: Path, tmp_path: Path) -> None:
    tampered = tmp_path / "edited" / f"{PLAN}.json"
    tampered.parent.mkdir()
    body = json.loads(catalogue_bytes()[f"{PLAN}.json"])
    body["loop"]["empty_retry_count"] = 3  # edited by hand: fingerprint left as it was
    tampered.write_text(json.dumps(body, indent=2, sort_keys=True) + "\n")
    for args in ([str(plans / f"{PLAN}.json"), str(tampered)], [str(tampered.parent), str(tampered.parent)]):
        out = refused(*args)
        assert f"{tampered}: tampered plan: the fingerprint says {body['fingerprint'][:12]}…" in out.stderr
        assert "it is not diffed" in out.stderr and "empty_retry_count" not in out.stderr


def test_plan_body_that_does_not_validate(plans: Path, tmp_path: Path) -> None:
    from tests.diff.plans import sealed

    body = json.loads(catalogue_bytes()[f"{PLAN}.json"])
    body["loop"]["empty_retry_count"] = -1  # a correctly sealed plan the plan model refuses
    odd = tmp_path / "odd.json"
    odd.write_bytes(sealed(body))
    out = refused(str(plans / f"{PLAN}.json"), str(odd))
    assert re.search(r"odd\.json:\d+:\d+: error\[PLAN\]: loop\.empty_retry_count: Input should be greater than or "
                     r"equal to 0", out.stderr)
    assert f"plan body does not match plan_version {PLAN_VERSION}" in out.stderr


def test_file_against_folder(plans: Path) -> None:
    out = refused(str(plans / f"{PLAN}.json"), str(plans))
    assert "is a file and" in out.stderr and "is a folder: compare two plan files or two folders" in out.stderr


def test_empty_folder(plans: Path, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert "the folder holds no plan files (*.json)" in refused(str(tmp_path / "empty"), str(plans)).stderr


def test_usage_errors_exit_2(plans: Path) -> None:
    assert "give two plan files or folders (OLD NEW), or --base REV" in refused(str(plans)).stderr
    assert "give two plan files or folders (OLD NEW), or --base REV" in refused().stderr
    assert "give either OLD NEW or --base REV, not both" in refused(str(plans), str(plans), "--base", "HEAD").stderr
    out = refused(str(plans), str(plans), "--config", "run.yaml")
    assert "--config, --presets-file and --data only apply with --base" in out.stderr
    bad_format = invoke("diff", str(plans), str(plans), "--format", "html")
    assert bad_format.code == 2 and "'html' is not one of 'text', 'markdown', 'json'" in bad_format.stderr


def test_unknown_check_names_did_you_mean(plans: Path) -> None:
    out = refused(str(plans), str(plans), "--checks", "policy,loop")
    assert "--checks: unknown check 'policy'; did you mean 'policies'?" in out.stderr
    assert "valid choices: allowed_params, binding, defaults, inputs, loop, params, policies" in out.stderr
    out = refused(str(plans), str(plans), "--ignore", "input")
    assert "--ignore: unknown check 'input'; did you mean 'inputs'?" in out.stderr


def test_no_checks_left(plans: Path) -> None:
    out = refused(str(plans), str(plans), "--checks", "loop", "--ignore", "loop")
    assert "no checks left to run after --checks / --ignore" in out.stderr
    assert "no checks left" in refused(str(plans), str(plans), "--checks", " , ").stderr


def test_unreadable_path(plans: Path, tmp_path: Path) -> None:
    too_long = tmp_path / ("a" * 300 + ".json")
    out = refused(str(too_long), str(plans / f"{PLAN}.json"))
    assert ": cannot read: File name too long" in out.stderr
