"""Every hard input limit, each with the attack it stops: a located error, exit 2, nothing written."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from capplan.core.input_limits import (
    MAX_ALIASES,
    MAX_CONFIG_BYTES,
    MAX_NESTING,
    MAX_PLAN_BYTES,
    MAX_REQUEST_BYTES,
)
from capplan.presets import data_dir
from tests.cli_runner import invoke_checked

REPO = Path(__file__).resolve().parents[2]
GOLDEN_PLAN = REPO / "golden" / "plans" / "gpt-4o.json"
REQUEST = {"messages": [{"role": "user", "content": "hi"}]}


def run(*args: str) -> Result:
    return invoke_checked(*args)


def alias_bomb() -> str:
    """The 470-byte bomb: ten anchored lists, each repeating the previous alias nine times."""
    lines = ["a0: &a0 [x,x,x,x,x,x,x,x,x]"]
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 10)]
    return "\n".join(lines) + "\n"


def test_the_alias_bomb_fails_fast_at_the_alias(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(alias_bomb())
    assert bomb.stat().st_size < 500
    result = run("lint", str(bomb))
    assert result.exit_code == 2
    first = result.output.splitlines()[0]
    assert first.startswith(f"{bomb}:") and "error[alias-expansion]" in first and "*a" in first
    out = tmp_path / "out"
    result = run("compile", "--presets-file", str(bomb), "--out", str(out))
    assert result.exit_code == 2 and "error[alias-expansion]" in result.output
    assert not out.exists()


def test_alias_uses_are_counted(tmp_path: Path) -> None:
    many = tmp_path / "many.yaml"
    items = ", ".join(["*s"] * (MAX_ALIASES + 1))
    many.write_text(f"x: &s {{a: 1}}\ny: [{items}]\n")
    result = run("lint", str(many))
    assert result.exit_code == 2 and "error[too-many-aliases]" in result.output


def test_a_few_aliases_are_fine(tmp_path: Path) -> None:
    ok = tmp_path / "ok.yaml"
    ok.write_text("presets:\n  a:\n    match: &globs ['acme-a*']\n    empty_retry_count: 1\n"
                  "  b:\n    match: ['acme-b*']\n    max_context_tokens: &ctx 9000\n  c:\n    match: ['acme-c*']\n"
                  "    max_context_tokens: *ctx\n")
    assert run("lint", str(ok)).exit_code == 0


@pytest.mark.parametrize("shape", ["flow", "block", "json"])
def test_deep_nesting_is_refused_with_its_line(tmp_path: Path, shape: str) -> None:
    path = tmp_path / ("deep.json" if shape == "json" else "deep.yaml")
    if shape == "flow":
        path.write_text("presets:\n  x: " + "[" * 5000 + "]" * 5000 + "\n")
    elif shape == "block":
        path.write_text("presets:\n" + "".join(" " * (i + 1) + f"k{i}:\n" for i in range(400)) + " " * 401 + "v: 1\n")
    else:
        path.write_text('{"models": ' + "[" * 5000 + "]" * 5000 + "}")
    result = run("lint", "--kind", "pricing" if shape == "json" else "overlay", str(path))
    assert result.exit_code == 2
    assert "error[nesting-too-deep]" in result.output and f"{MAX_NESTING} levels" in result.output
    if shape == "flow":
        assert result.output.startswith(f"{path}:2:")


def test_nesting_within_the_limit_is_fine(tmp_path: Path) -> None:
    from capplan.core.yaml_source import read_source

    path = tmp_path / "ok.yaml"
    path.write_text("a: " + "[" * (MAX_NESTING - 2) + "]" * (MAX_NESTING - 2) + "\nb: '[[[[[[' # ]]]]\n")
    assert read_source(path).data["b"] == "[[[[[["


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_devices_are_refused_before_reading(tmp_path: Path, device: str) -> None:
    result = run("lint", device)
    assert result.exit_code == 2 and "error[special-file]" in result.output
    result = run("compile", "--presets-file", device, "--out", str(tmp_path / "o"))
    assert result.exit_code == 2 and "error[special-file]" in result.output
    assert not (tmp_path / "o").exists()


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "overlay.yaml"
    os.mkfifo(fifo)
    result = run("compile", "--presets-file", str(fifo), "--out", str(tmp_path / "o"))
    assert result.exit_code == 2 and f"{fifo}:1:1: error[special-file]" in result.output
    plan = tmp_path / "plan.json"
    os.mkfifo(plan)
    request = tmp_path / "r.json"
    request.write_text(json.dumps(REQUEST))
    result = run("preview", "--plan", str(plan), str(request))
    assert result.exit_code == 2 and "not a regular file" in result.output


def _sparse(path: Path, size: int) -> Path:
    with open(path, "wb") as handle:
        handle.truncate(size)
    return path


def test_oversized_config_is_refused_before_parsing(tmp_path: Path) -> None:
    big = _sparse(tmp_path / "big.yaml", 50 * 1024 * 1024)
    result = run("lint", str(big))
    assert result.exit_code == 2 and "error[file-too-large]" in result.output
    assert str(MAX_CONFIG_BYTES) in result.output


def test_oversized_request_and_plan_are_refused(tmp_path: Path) -> None:
    request = _sparse(tmp_path / "r.json", MAX_REQUEST_BYTES + 1)
    result = run("preview", "--plan", str(GOLDEN_PLAN), str(request))
    assert result.exit_code == 2 and f"{request}:1:1: error[REQUEST]" in result.output
    plan = _sparse(tmp_path / "p.json", MAX_PLAN_BYTES + 1)
    good = tmp_path / "ok.json"
    good.write_text(json.dumps(REQUEST))
    result = run("preview", "--plan", str(plan), str(good))
    assert result.exit_code == 2 and "error[PLAN]" in result.output and str(MAX_PLAN_BYTES) in result.output


@pytest.mark.parametrize(
    ("text", "located", "message"),
    [
        ('{"messages": [{"role": "user", "content": "hi"}],\n "temperature": Infinity}', ":2:17:", "Infinity is not a JSON number"),
        ('{"messages": [{"role": "user", "content": "a\\ud800b"}]}', ":1:45:", "surrogate"),
        ('{"messages": [{"role": "user", "content": "\\ude00"}]}', ":1:44:", "surrogate"),
        ('{"messages": ' + "[" * 5000 + "]" * 5000 + "}", ":1:", "nested more than"),
        ('{"messages": [], "messages": [{"role": "user", "content": "x"}]}', ":1:", "duplicate key 'messages'"),
    ],
)
def test_request_files_that_are_not_strict_json(tmp_path: Path, text: str, located: str, message: str) -> None:
    request = tmp_path / "r.json"
    request.write_text(text)
    for command in ("preview", "send"):
        result = run(command, "--plan", str(GOLDEN_PLAN), str(request))
        assert result.exit_code == 2, result.output
        line = result.output.splitlines()[0]
        assert line.startswith(f"{request}{located}") and "error[REQUEST]" in line and message in line


def test_a_surrogate_pair_is_text(tmp_path: Path) -> None:
    from capplan.executor.messages import parse_request

    request = parse_request('{"messages": [{"role": "user", "content": "\\ud83d\\ude00 \\\\ud800"}]}')
    assert request.messages[0].content == "\U0001f600 \\ud800"  # type: ignore[union-attr]


def _plan_with(tmp_path: Path, edit: Any) -> Path:
    data = json.loads(GOLDEN_PLAN.read_text())
    text = edit(data)
    path = tmp_path / "plan.json"
    path.write_text(text)
    return path


def _canonical(data: dict[str, Any]) -> str:
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: _canonical({**d, "plan_version": True}), "plan_version must be a whole number, not true/false"),
        (lambda d: _canonical({**d, "plan_version": 1.0}), "plan_version must be a whole number, not a fractional"),
        (lambda d: _canonical({**d, "plan_version": "3"}), "plan_version must be a whole number, not a string"),
        (lambda d: _canonical(d).replace("{\n", '{\n  "fingerprint": "0",\n', 1), "duplicate key 'fingerprint'"),
        (lambda d: json.dumps(d), "not in canonical form"),
        (lambda d: _canonical(d).replace('"temperature": 0.0', '"temperature": NaN'), "NaN is not a JSON number"),
    ],
)
def test_plan_loading_refuses_anything_but_exactly_a_plan(tmp_path: Path, edit: Any, message: str) -> None:
    plan = _plan_with(tmp_path, edit)
    request = tmp_path / "r.json"
    request.write_text(json.dumps(REQUEST))
    result = run("preview", "--plan", str(plan), str(request))
    assert result.exit_code == 2
    assert message in result.output and result.output.count("error[PLAN]") == 1


@pytest.mark.parametrize("command", ["preview", "send"])
def test_a_string_plan_version_is_located_at_its_line_with_the_recompile_hint(tmp_path: Path, command: str) -> None:
    data = json.loads(GOLDEN_PLAN.read_text())
    plan = _plan_with(tmp_path, lambda d: _canonical({**d, "plan_version": str(d["plan_version"])}))
    line = 1 + _canonical({**data, "plan_version": "x"}).split("\n").index('  "plan_version": "x",')
    request = tmp_path / "r.json"
    request.write_text(json.dumps(REQUEST))
    result = run(command, "--plan", str(plan), str(request))
    assert result.exit_code == 2, result.output
    assert f"{plan}:{line}:3: error[PLAN]: plan_version must be a whole number, not a string" in result.output
    assert "hint: plan files are written by capplan, never by hand: recompile it with `capplan compile`" in result.output
    assert "Traceback" not in result.output


def test_plan_types_are_strict_even_with_a_recomputed_fingerprint(tmp_path: Path) -> None:
    from capplan.core.canonical import canonical_bytes, sha256_hex

    def retype(data: dict[str, Any]) -> str:
        data["loop"]["empty_retry_count"] = "3"  # lax validation would read this as 3
        body = {k: v for k, v in data.items() if k != "fingerprint"}
        return _canonical({**body, "fingerprint": sha256_hex(canonical_bytes(body))})

    plan = _plan_with(tmp_path, retype)
    request = tmp_path / "r.json"
    request.write_text(json.dumps(REQUEST))
    result = run("preview", "--plan", str(plan), str(request))
    assert result.exit_code == 2 and "loop.empty_retry_count" in result.output


def test_pricing_json_duplicate_and_non_finite(tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(data_dir(), data, ignore=shutil.ignore_patterns("*.py", "__pycache__", "catalogue.yaml"))
    pricing = data / "pricing.json"
    text = pricing.read_text()
    pricing.write_text(text.replace('"models": {', '"models": {"x": {"input": NaN, "output": 1},', 1))
    result = run("compile", "--data", str(data), "--out", str(tmp_path / "o"))
    assert result.exit_code == 2 and "error[non-finite-number]: NaN is not a JSON number" in result.output
    pricing.write_text(text.replace('"models": {', '"models": {"_x": {"input": 1, "output": 1},\n"_x": {"input": 2, "output": 2},', 1))
    result = run("compile", "--data", str(data), "--out", str(tmp_path / "o"))
    assert result.exit_code == 2 and "error[duplicate-key]" in result.output
    assert not (tmp_path / "o").exists()


MOCK_PLAN = REPO / "golden" / "plans" / "mock-echo.json"
OBJECT_SCHEMA = "parameters must be an object schema (type object, with properties)"


@pytest.mark.parametrize(("parameters", "where", "message"), [
    ({"type": "string"}, "parameters.type", f'{OBJECT_SCHEMA}, not type "string"; wrap a single value'),
    ({"type": "array", "items": {"type": "integer"}}, "parameters.type", f'{OBJECT_SCHEMA}, not type "array"'),
    ({"type": ["object", "null"]}, "parameters.type", f'{OBJECT_SCHEMA}, not type ["object", "null"]'),
    ({"type": "object", "properties": ["city"]}, "parameters.properties",
     "parameters.properties must be an object of parameter names to schemas"),
])
@pytest.mark.parametrize("command", ["preview", "send"])
def test_a_request_tool_whose_parameters_are_not_an_object_schema_is_located(
        tmp_path: Path, command: str, parameters: dict[str, Any], where: str, message: str) -> None:
    # the mock answers offline: before this rule, `send` called it and exited 0
    request = tmp_path / "r.json"
    tool = {"type": "function", "function": {"name": "lookup", "description": "d", "parameters": parameters}}
    request.write_text(json.dumps({**REQUEST, "tools": [tool]}, indent=1))
    result = run(command, "--plan", str(MOCK_PLAN), str(request))
    assert result.exit_code == 2, result.output
    lines = request.read_text().splitlines()
    opened = next(i for i, text in enumerate(lines) if '"parameters":' in text)
    key = f'"{where.split(".")[-1]}":'
    line = 1 + next(i for i in range(opened + 1, len(lines)) if key in lines[i])  # the key inside parameters
    assert f"{request}:{line}:" in result.output
    assert f"error[REQUEST]: tools.0.function.{where}: tool 'lookup': {message}" in result.output
