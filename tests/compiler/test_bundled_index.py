"""The shipped parse of the bundled files: up to date, and only ever a shortcut."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from capplan.compiler import bundled_index
from capplan.compiler.bundled_index import UPDATE_COMMAND, build, index_path, lookup
from capplan.compiler.compile import compile_paths
from capplan.compiler.loading import bundled_dir
from capplan.core.yaml_source import parse_with_libyaml, read_bundled, read_source

REPO = Path(__file__).resolve().parents[2]
BUNDLED_YAML = sorted(p.name for p in bundled_dir().glob("*.yaml"))


def test_the_shipped_index_matches_the_bundled_files() -> None:
    assert index_path().read_bytes() == build(bundled_dir()), f"stale {index_path().name}; run: {UPDATE_COMMAND}"


@pytest.mark.parametrize("name", BUNDLED_YAML)
def test_the_index_gives_what_both_readers_give(name: str) -> None:
    raw = (bundled_dir() / name).read_bytes()
    indexed = lookup(hashlib.sha256(raw).hexdigest())
    assert indexed is not None
    careful = read_source(bundled_dir() / name, name)
    assert indexed == parse_with_libyaml(raw) == (careful.data, careful.positions)
    # order is data too (first matching preset wins): compare it, not just equality
    assert _ordered(indexed[0]) == _ordered(careful.data)
    assert list(indexed[1]) == list(careful.positions)


def _ordered(value: object) -> object:
    if isinstance(value, dict):
        return [(k, _ordered(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [_ordered(v) for v in value]
    return (type(value).__name__, value)


def _copy_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes | None = None) -> Path:
    """The index the loaders use, pointed at a copy under tmp_path (the shipped one is never touched)."""
    target = tmp_path / "index" / "bundled_index.json"
    target.parent.mkdir()
    target.write_bytes(index_path().read_bytes() if content is None else content)
    monkeypatch.setattr(bundled_index, "index_path", lambda: target)
    return target


def _compiled_bytes(out: Path) -> dict[str, bytes]:
    from capplan.compiler.plan_output import write_plan_set

    result = compile_paths()
    write_plan_set(result.plans, result.manifest, out)
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


@pytest.mark.fast_side
@pytest.mark.parametrize("damage", ["missing", "garbage", "one flipped byte", "other format", "truncated",
                                    "unreadable"])
def test_a_damaged_or_missing_index_changes_nothing_but_speed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              damage: str) -> None:
    target = _copy_index(tmp_path, monkeypatch)
    expected = _compiled_bytes(tmp_path / "expected")
    good = target.read_bytes()
    if damage == "missing":
        target.unlink()
    elif damage == "garbage":
        target.write_bytes(b"\x00\xff not an index")
    elif damage == "one flipped byte":
        at = good.index(b'"presets"')
        target.write_bytes(good[:at + 2] + b"Q" + good[at + 3:])
    elif damage == "other format":
        body = good.partition(b"\n")[2].replace(b'"format":1', b'"format":99')
        target.write_bytes(hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
    elif damage == "truncated":
        target.write_bytes(good[: len(good) // 2])
    else:  # a folder where the file should be reads as an OSError, even for root
        target.unlink()
        target.mkdir()
    for name in BUNDLED_YAML:
        assert lookup(hashlib.sha256((bundled_dir() / name).read_bytes()).hexdigest()) is None
    parsed: list[bytes] = []
    monkeypatch.setattr("capplan.core.yaml_source.parse_with_libyaml",
                        lambda raw: parsed.append(raw) or parse_with_libyaml(raw))
    assert _compiled_bytes(tmp_path / "plans") == expected
    assert parsed, "the bundled files were parsed instead"


def test_an_edited_bundled_file_is_parsed_not_looked_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _copy_index(tmp_path, monkeypatch)
    edited = tmp_path / "model_presets.yaml"
    text = (bundled_dir() / "model_presets.yaml").read_text(encoding="utf-8")
    edited.write_text(text + "\n# an edit the index has never seen\n", encoding="utf-8")
    source = read_bundled(edited, "bundled:model_presets.yaml")
    careful = read_source(edited, "bundled:model_presets.yaml")
    assert (source.data, source.positions, source.sha256) == (careful.data, careful.positions, careful.sha256)
    assert lookup(source.sha256) is None


def test_values_json_cannot_carry_exactly_are_left_out(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("when: 2026-08-01\n", encoding="utf-8")  # a date
    (tmp_path / "b.yaml").write_text("1: one\n", encoding="utf-8")  # an int key
    (tmp_path / "c.yaml").write_text("x: .nan\n", encoding="utf-8")
    (tmp_path / "d.yaml").write_text("ok: [1, 2.5, true, null, text]\n", encoding="utf-8")
    index = tmp_path / "index.json"
    index.write_bytes(build(tmp_path))
    known = {name: lookup(hashlib.sha256((tmp_path / name).read_bytes()).hexdigest(), index)
             for name in ("a.yaml", "b.yaml", "c.yaml", "d.yaml")}
    assert [n for n, v in known.items() if v is not None] == ["d.yaml"]
    data = known["d.yaml"][0]  # type: ignore[index]
    assert data == {"ok": [1, 2.5, True, None, "text"]}
    assert [type(v) for v in data["ok"]] == [int, float, bool, type(None), str]


def test_check_command_names_the_update_command(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "capplan.compiler.bundled_index", "--check"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_lint_reads_the_catalogues_routes_as_the_run_config_model_gives_them() -> None:
    from capplan.compiler.inputs.providers_file import binding_key
    from capplan.compiler.inputs.run_config import RunConfig
    from capplan.compiler.lint import catalogue_routes
    from capplan.compiler.loading import CATALOGUE_FILE, load_file

    loaded, problems = load_file(bundled_dir() / CATALOGUE_FILE, RunConfig, "bundled:" + CATALOGUE_FILE, bundled=True)
    assert loaded is not None and problems == []
    assert catalogue_routes() == {binding_key(m.provider) for m in loaded.model.models.values()}
    assert len(catalogue_routes()) > 3
