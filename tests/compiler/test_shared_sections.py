"""Linting an overlay and compiling build the sections several models hold first (seam *shared
sections*): the same diagnostics and plans, byte for byte, as each validator building its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

OVERLAY = """\
presets:
  acme_chat:
    responses_api: {store: maybe}
    params:
      supports_seed: sometimes
      temperature: hot
      param_value_rules:
        tool_choice:
          auto: {action: explode, evidence: "2026-08-01, vendor API has no auto"}
    match: ["acme-*"]
    reasoning_codec: openai
bindings:
  openai:
    base_url: 12
    failure_rules: [{status: "x"}]
"""


def _lint(overlay: Path, reference: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CAPPLAN_REFERENCE"}
    if reference:
        env["CAPPLAN_REFERENCE"] = "1"
    return subprocess.run([sys.executable, "-m", "capplan.cli", "lint", "--format", "json", str(overlay)],
                          capture_output=True, text=True, timeout=120, env=env)


@pytest.mark.parametrize("text", [OVERLAY, OVERLAY.split("bindings:")[0], "presets: {}\n"])
def test_an_overlays_diagnostics_do_not_depend_on_the_build_order(text: str, tmp_path: Path) -> None:
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text(text, encoding="utf-8")
    fast, reference = _lint(overlay, reference=False), _lint(overlay, reference=True)
    assert (fast.returncode, fast.stdout, fast.stderr) == (reference.returncode, reference.stdout, reference.stderr)
    if text == OVERLAY:
        assert fast.returncode == 2 and fast.stdout.count('"severity": "error"') >= 5, fast.stdout


def test_the_sections_are_built_before_the_overlay_is_read(tmp_path: Path) -> None:
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text(OVERLAY, encoding="utf-8")
    probe = (
        "import sys\n"
        "from capplan.compiler.lint import lint_file\n"
        "from capplan.compiler.inputs.preset_file import PresetEntry\n"
        "from capplan.executor.binding import ProviderBinding\n"
        f"lint_file(__import__('pathlib').Path({str(overlay)!r}))\n"
        "print(PresetEntry.__pydantic_complete__, ProviderBinding.__pydantic_complete__)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "CAPPLAN_REFERENCE"}
    for reference, expected in ((False, "True True"), (True, "False False")):
        if reference:
            env["CAPPLAN_REFERENCE"] = "1"
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == expected


ORDER_PROBE = """
import json, sys
import pydantic._internal._model_construction as construction
done = []
complete = construction.complete_model_class
def recorded(cls, *args, **kwargs):
    result = complete(cls, *args, **kwargs)
    done.append(cls.__qualname__)
    return result
construction.complete_model_class = recorded
from capplan.compiler.compile import compile_models
from capplan.compiler.loading import load_inputs
compile_models(load_inputs(data_dir=None, run_config=None, overlays=[]))
print(json.dumps(done))
"""


def _build_order(reference: bool) -> list[str]:
    import json

    env = {k: v for k, v in os.environ.items() if k != "CAPPLAN_REFERENCE"}
    if reference:
        env["CAPPLAN_REFERENCE"] = "1"
    done = subprocess.run([sys.executable, "-c", ORDER_PROBE], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    order: list[str] = json.loads(done.stdout)
    return order


def test_compile_builds_the_binding_and_the_run_config_sections_before_what_holds_them() -> None:
    fast, reference = _build_order(reference=False), _build_order(reference=True)
    holder = "RootModel[dict[str, ProviderBinding]]"
    assert fast.index("ProviderBinding") < fast.index(holder) < fast.index("BindingRef")
    assert reference.index(holder) < reference.index("BindingRef") < reference.index("ProviderBinding")
    for section in ("ReasoningConfig", "EngineConfig", "RateLimits", "TrialChoices"):
        assert fast.index(section) < fast.index("RunConfig")
        assert reference.index("RunConfig") < reference.index(section)


def test_compile_writes_the_same_plans_whichever_builds_first(tmp_path: Path) -> None:
    outputs = []
    for reference in (False, True):
        env = {k: v for k, v in os.environ.items() if k != "CAPPLAN_REFERENCE"}
        if reference:
            env["CAPPLAN_REFERENCE"] = "1"
        out = tmp_path / ("reference" if reference else "fast")
        done = subprocess.run([sys.executable, "-m", "capplan.cli", "compile", "--out", str(out)], capture_output=True,
                              text=True, timeout=120, env=env, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        outputs.append({p.name: p.read_bytes() for p in sorted(out.iterdir())})
    assert len(outputs[0]) > 10 and outputs[0] == outputs[1]
