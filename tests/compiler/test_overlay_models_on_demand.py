"""A compile with no overlay never imports the overlay's models; one with an overlay reads it as before."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
OVERLAY_MODULES = ("capplan.compiler.inputs.overlay_file", "capplan.compiler.inputs.probe_block")

PROBE = f"""
import json, sys
from capplan.cli import main
sys.argv = ["capplan", "compile", *sys.argv[1:]]
try:
    main()
except SystemExit as done:
    print(json.dumps([done.code, [m for m in {OVERLAY_MODULES!r} if m in sys.modules]]))
"""


def _compile(tmp_path: Path, *args: str) -> tuple[int, list[str], str]:
    done = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    code, imported = json.loads(done.stdout.strip().splitlines()[-1])
    return code, imported, done.stdout + done.stderr


@pytest.mark.parametrize("with_overlay", [False, True])
def test_the_overlay_models_are_imported_only_to_read_an_overlay(tmp_path: Path, with_overlay: bool) -> None:
    (tmp_path / ".git").mkdir()
    args = ["--model", "mock-echo", "--out", str(tmp_path / "plans")]
    if with_overlay:
        overlay = tmp_path / "overlay.yaml"
        overlay.write_text("presets:\n  mock_tuned:\n    match: ['echo-*']\n    default_max_turns: 7\n", encoding="utf-8")
        args += ["--presets-file", str(overlay)]
    code, imported, output = _compile(tmp_path, *args)
    assert code == 0, output
    assert imported == (list(OVERLAY_MODULES) if with_overlay else []), output
    plan = json.loads((tmp_path / "plans" / "mock-echo.json").read_text(encoding="utf-8"))
    assert (plan["loop"]["default_max_turns"] == 7) is with_overlay


def test_a_broken_overlay_is_still_a_located_error(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("presets:\n  mock_tuned:\n    match: ['echo-*']\n    default_max_turns: many\n", encoding="utf-8")
    code, _, output = _compile(tmp_path, "--model", "mock-echo", "--presets-file", str(overlay),
                               "--out", str(tmp_path / "plans"))
    assert code == 2 and f"{overlay}:4:" in output and "Traceback" not in output, output
    assert not (tmp_path / "plans").exists()
