"""Editor support holds: the bundled and example YAML validate against the checked-in JSON Schemas.

Each YAML file names its schema on its first line (``# yaml-language-server: $schema=…``),
exactly as an editor reads it; the test follows that line, so a wrong or stale pointer fails
here too. ``pricing.json`` has no comment line, so its schema is named below.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from ruamel.yaml import YAML

REPO = Path(__file__).resolve().parents[2]
SCHEMAS = REPO / "schemas"
MODELINE = re.compile(r"^# yaml-language-server: \$schema=(?P<target>\S+)\s*$")
REGEN = "capplan schema --out schemas/"

#: which schema each bundled file must point at (a modeline to the wrong schema is a bug too)
BUNDLED = {
    "presets/model_presets.yaml": "preset-file.schema.json",
    "presets/providers.yaml": "providers.schema.json",
    "presets/catalogue.yaml": "run-config.schema.json",
}


def yaml_files() -> list[Path]:
    """Every capplan YAML that ships: bundled data and examples (workflow files are .yml)."""
    files = sorted((REPO / "presets").glob("*.yaml")) + sorted((REPO / "examples").rglob("*.yaml"))
    return [p.relative_to(REPO) for p in files]


def load_yaml(path: Path) -> Any:
    """YAML 1.2, as capplan itself reads it (ruamel), as plain data."""
    return YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))


def schema_for(path: Path) -> Path:
    """The schema the file's first line points at, resolved like an editor does: relative to the file."""
    first = path.read_text(encoding="utf-8").splitlines()[0] if path.stat().st_size else ""
    match = MODELINE.match(first)
    assert match, f"{path}: the first line must be '# yaml-language-server: $schema=<path to schemas/…>'"
    target = (path.parent / match["target"]).resolve()
    assert target.parent == SCHEMAS.resolve(), f"{path}: $schema must point into schemas/, not {match['target']}"
    assert target.is_file(), f"{path}: {target.name} does not exist; regenerate the schemas with: {REGEN}"
    return target


def problems(data: Any, schema_path: Path) -> list[str]:
    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema)
    return [f"{'.'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in validator.iter_errors(data)]


def test_there_are_files_to_check() -> None:
    names = {str(p) for p in yaml_files()}
    assert set(BUNDLED) <= names
    assert any(n.startswith("examples/overlays/") for n in names)


@pytest.mark.parametrize("rel", yaml_files(), ids=str)
def test_yaml_validates_against_its_schema(rel: Path) -> None:
    path = REPO / rel
    schema = schema_for(path)
    if str(rel) in BUNDLED:
        assert schema.name == BUNDLED[str(rel)]
    assert problems(load_yaml(path), schema) == []


def test_pricing_json_validates() -> None:
    data = json.loads((REPO / "presets" / "pricing.json").read_text(encoding="utf-8"))
    assert problems(data, SCHEMAS / "pricing.schema.json") == []


def test_the_schemas_do_reject_bad_input(tmp_path: Path) -> None:
    """Guards against a schema so loose that the tests above could never fail."""
    bad = load_yaml(REPO / "tests" / "compiler" / "bad_inputs" / "unknown_keys.yaml")
    found = problems(bad, SCHEMAS / "overlay.schema.json")
    assert any("schema_sanitiser" in p for p in found), found
    wrong_pointer = tmp_path / "ops.yaml"
    wrong_pointer.write_text("# yaml-language-server: $schema=../schemas/overlay.schema.json\npresets: {}\n")
    with pytest.raises(AssertionError, match=r"must point into schemas/"):
        schema_for(wrong_pointer)
