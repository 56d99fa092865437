"""pydantic's plugin loader imported without importlib.metadata (seam *entry points*): the commands
that ask nothing else of importlib.metadata never import it, and whatever calls into the loader
later still gets importlib's answer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]

# run as the console script runs: the CLI's main, then a look at what was imported before the
# process ends (lint and compile end through os._exit, which the probe wraps)
CLI_PROBE = textwrap.dedent('''
    import json, os, sys
    real_exit = os._exit
    def report(code):
        sys.stderr.write("MODULES " + json.dumps(sorted(m for m in sys.modules if m.startswith(
            ("importlib.metadata", "email")))) + "\\n")
        sys.stderr.flush()
        real_exit(code)
    os._exit = report
    sys.argv = ["capplan", *sys.argv[1:]]
    from capplan.cli import main
    try:
        main()
    except SystemExit as done:
        report(done.code if isinstance(done.code, int) else 1)
    report(0)
''')


def _env(extra: dict[str, str] | None = None, path: list[Path] | None = None) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if k not in ("PYDANTIC_DISABLE_PLUGINS", "CAPPLAN_REFERENCE")}
    return {**base, "PYTHONPATH": os.pathsep.join(str(p) for p in [*(path or []), REPO]), **(extra or {})}


def _imported(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> list[str]:
    run = subprocess.run([sys.executable, "-c", CLI_PROBE, *args], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120, env=_env(env))
    assert run.returncode == 0, run.stdout + run.stderr
    line = [ln for ln in run.stderr.splitlines() if ln.startswith("MODULES ")][-1]
    modules: list[str] = json.loads(line.removeprefix("MODULES "))
    return modules


@pytest.fixture
def overlay(tmp_path: Path) -> Path:
    path = tmp_path / "overlay.yaml"
    path.write_text('presets:\n  acme:\n    match: ["acme-*"]\n', encoding="utf-8")
    return path


def test_lint_and_compile_never_import_importlib_metadata(tmp_path: Path, overlay: Path) -> None:
    assert _imported(tmp_path, "lint", str(overlay)) == []
    assert _imported(tmp_path, "compile", "--out", str(tmp_path / "plans")) == []
    assert len(list((tmp_path / "plans").glob("*.json"))) > 1


@pytest.mark.parametrize("env", [{"CAPPLAN_REFERENCE": "1"}, {"PYDANTIC_DISABLE_PLUGINS": "1"}])
def test_the_reference_mode_and_a_users_switch_import_it_as_pydantic_does(tmp_path: Path, overlay: Path,
                                                                           env: dict[str, str]) -> None:
    assert "importlib.metadata" in _imported(tmp_path, "lint", str(overlay), env=env)


LATER_LOOKUP = textwrap.dedent('''
    import json, sys
    from capplan.core.pydantic_plugins import answer_pydantic_plugin_lookup
    answer_pydantic_plugin_lookup()
    import pydantic.plugin._loader as loader
    answered = dict(loader._plugins)
    imported_then = "importlib.metadata" in sys.modules
    sys.path.insert(0, sys.argv[1])  # a plugin installed after the answer
    loader._plugins = None  # pydantic is made to look again
    found = [type(p).__name__ for p in loader.get_plugins()]
    import importlib.metadata
    print(json.dumps({"answered": answered, "imported_then": imported_then, "found": found,
                      "real_module": importlib.metadata.__spec__ is not None,
                      "same_function": loader.entry_points is importlib.metadata.entry_points}))
''')

PLUGIN = "class Plugin:\n    pass\n\n\nplugin = Plugin()\n"


def _plugin_site(tmp_path: Path) -> Path:
    site = tmp_path / "later"
    info = site / "late_plugin-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: late-plugin\nVersion: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[pydantic]\nlate = late_plugin:plugin\n", encoding="utf-8")
    (site / "late_plugin.py").write_text(PLUGIN, encoding="utf-8")
    return site


def test_a_later_lookup_reaches_importlib_and_finds_what_it_finds(tmp_path: Path) -> None:
    site = _plugin_site(tmp_path)
    run = subprocess.run([sys.executable, "-c", LATER_LOOKUP, str(site)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120, env=_env())
    assert run.returncode == 0, run.stderr
    result: dict[str, Any] = json.loads(run.stdout)
    assert result["answered"] == {} and result["imported_then"] is False
    assert result["found"] == ["Plugin"]  # importlib.metadata, imported on that call, found the plugin
    assert result["real_module"] is True and result["same_function"] is False


OTHER_NAME = textwrap.dedent('''
    import importlib, json, sys
    from capplan.core import pydantic_plugins
    pydantic_plugins._LOADER = "asks_more"  # a loader that takes more than entry_points
    module = pydantic_plugins._import_loader_without_metadata()
    real = sys.modules["importlib.metadata"]
    print(json.dumps({"version_is_real": module.version is real.version, "real_module": real.__spec__ is not None,
                      "answer": module.version("pydantic") == real.version("pydantic")}))
''')


def test_a_loader_asking_for_another_name_gets_the_real_module(tmp_path: Path) -> None:
    (tmp_path / "asks_more.py").write_text("from importlib.metadata import entry_points, version\n", encoding="utf-8")
    run = subprocess.run([sys.executable, "-c", OTHER_NAME], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120, env=_env(path=[tmp_path]))
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == {"version_is_real": True, "real_module": True, "answer": True}


def test_a_loader_that_fails_to_import_leaves_no_stand_in(tmp_path: Path) -> None:
    (tmp_path / "broken_loader.py").write_text("from importlib.metadata import entry_points\nraise ImportError('x')\n",
                                               encoding="utf-8")
    probe = textwrap.dedent('''
        import sys
        from capplan.core import pydantic_plugins
        pydantic_plugins._LOADER = "broken_loader"
        try:
            pydantic_plugins._import_loader_without_metadata()
        except ImportError:
            pass
        print("importlib.metadata" in sys.modules)
    ''')
    run = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env=_env(path=[tmp_path]))
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "False"
