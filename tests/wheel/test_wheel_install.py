"""The built wheel, installed into a fresh venv without the run extra, works from outside the checkout.

What a user gets from ``pip install capplan``: only ``capplan`` at the top of site-packages, no
litellm, no ``golden/`` folder; compile, lint and an offline trial on the mock run; golden plans
are read and written in the project the command runs in, never in site-packages; the replay
harness still runs as a script; a real provider call names the run extra. The wheel is built
from a copy of the working tree (a stale ``build/`` folder in the checkout cannot leak into it),
and dependencies come from the package index through pip's cache; the test is skipped, saying
so, only when that index cannot be reached.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
INSTALL_TIMEOUT_S = 240
COMMAND_TIMEOUT_S = 120
#: what pip prints when the index (not the package) is the problem
UNREACHABLE = ("NewConnectionError", "Temporary failure in name resolution", "Network is unreachable",
               "Failed to establish a new connection", "Could not fetch URL", "ConnectTimeoutError",
               "ReadTimeoutError", "ProxyError")
#: not part of what the build backend reads; copying them only costs time
NOT_BUILT = (".git", ".venv", "build", "dist", "site", "tests", "benchmarks", "__pycache__", "*.egg-info",
             ".mypy_cache", ".pytest_cache", ".hypothesis")


@dataclass(frozen=True)
class Installed:
    venv: Path
    site: Path
    work: Path  # a folder outside the checkout, not inside any git repository

    @property
    def capplan(self) -> Path:
        return self.venv / "bin" / "capplan"

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _run(args: list[str | Path], cwd: Path, timeout: float = COMMAND_TIMEOUT_S,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], cwd=cwd, env=_env() if env is None else env, capture_output=True,
                          text=True, timeout=timeout, check=False)


class Unreachable(Exception):
    """The package index could not be reached: the tests skip, saying this."""


def build_and_install(base: Path, env: dict[str, str]) -> Installed:
    """The wheel built from a copy of the working tree and installed into a fresh venv under ``base``.

    ``tests/conftest.py`` starts this in a thread when collection selects a test of this module, so
    pip's minutes overlap the tests before it; :func:`installed` waits for it. ``env`` is taken
    before any test runs: a test that sets a variable meanwhile never reaches pip.
    """
    src = base / "src"
    shutil.copytree(REPO, src, symlinks=True, ignore=shutil.ignore_patterns(*NOT_BUILT))
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", ".", "-w", base / "dist"], cwd=src,
                 timeout=INSTALL_TIMEOUT_S, env=env)
    if built.returncode != 0 and any(m in built.stdout + built.stderr for m in UNREACHABLE):
        raise Unreachable("the package index is unreachable: the build backend cannot be fetched")
    assert built.returncode == 0, built.stdout + built.stderr
    wheels = sorted((base / "dist").glob("capplan-*.whl"))
    assert len(wheels) == 1, wheels
    venv = base / "venv"
    made = _run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=base, env=env)
    assert made.returncode == 0, made.stderr
    # the suite's pip installs into the new venv: no pip bootstrapped there, the cache shared
    done = _run([sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install", wheels[0]],
                cwd=base, timeout=INSTALL_TIMEOUT_S, env=env)
    if done.returncode != 0 and any(m in done.stdout + done.stderr for m in UNREACHABLE):
        raise Unreachable("the package index is unreachable: the wheel's dependencies cannot be installed")
    assert done.returncode == 0, done.stdout + done.stderr
    found = _run([venv / "bin" / "python", "-c", "import capplan, pathlib; print(pathlib.Path(capplan.__file__).parent)"],
                 cwd=base, env=env)
    assert found.returncode == 0, found.stderr
    site = Path(found.stdout.strip()).parent
    assert site.name == "site-packages" and venv in site.parents, site  # the install, not the checkout
    work = base / "project"
    work.mkdir()
    return Installed(venv, site, work)


#: where ``tests/conftest.py`` keeps the build it started early
EARLY_BUILD = pytest.StashKey[Future[Installed]]()


def start_early(config: pytest.Config) -> None:
    """Starts :func:`build_and_install` in a thread of its own, for :func:`installed` to wait on.

    Its folder is outside the session's temporary tree, which other tests read while this one is
    still being written (the Ray test greps all of it for its canary); it is removed at the end.
    """
    base = Path(tempfile.mkdtemp(prefix="capplan-wheel-"))
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="wheel-build")
    future = pool.submit(build_and_install, base, _env())
    pool.shutdown(wait=False)
    config.stash[EARLY_BUILD] = future

    def remove() -> None:
        wait([future], timeout=3 * INSTALL_TIMEOUT_S)  # pip's own timeouts bound it
        shutil.rmtree(base, ignore_errors=True)

    config.add_cleanup(remove)


@pytest.fixture(scope="module")
def installed(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    early = request.config.stash.get(EARLY_BUILD, None)
    try:
        if early is not None:
            return early.result(timeout=3 * INSTALL_TIMEOUT_S)
        return build_and_install(tmp_path_factory.mktemp("wheel"), _env())
    except Unreachable as unreachable:
        pytest.skip(str(unreachable))


def test_only_capplan_is_installed_at_the_top_of_site_packages(installed: Installed) -> None:
    dist_info = sorted(installed.site.glob("capplan-*.dist-info"))
    assert len(dist_info) == 1, dist_info
    assert (dist_info[0] / "top_level.txt").read_text().split() == ["capplan"]
    record = (dist_info[0] / "RECORD").read_text().splitlines()
    tops = {line.split(",")[0].split("/")[0] for line in record if line and not line.startswith("..")}
    assert tops == {"capplan", dist_info[0].name}
    assert not (installed.site / "golden").exists()
    assert not (installed.site / "litellm").exists()  # the core install: no run extra


def test_compile_lint_and_an_offline_trial_from_outside_the_checkout(installed: Installed) -> None:
    work = installed.work / "first-hour"
    work.mkdir()
    compiled = _run([installed.capplan, "compile", "--out", "plans"], cwd=work)
    assert compiled.returncode == 0, compiled.stderr
    assert (work / "plans" / "mock-echo.json").is_file()
    shutil.copy(REPO / "examples" / "overlays" / "ops-overlay.yaml", work / "ops-overlay.yaml")
    linted = _run([installed.capplan, "lint", "ops-overlay.yaml"], cwd=work)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    assert "1 file(s) checked: no problems" in linted.stdout
    shutil.copytree(REPO / "examples" / "trials" / "inventory_desk", work / "inventory_desk")
    mock = str(Path("plans") / "mock-echo.json")
    ran = _run([installed.capplan, "trial", "run", "inventory_desk", "--plan", mock, "--user-plan", mock,
                "--out", "runs/demo"], cwd=work)
    assert ran.returncode == 0, ran.stderr
    assert len((work / "runs" / "demo" / "runs.jsonl").read_text().splitlines()) == 5
    for result in (compiled, linted, ran):
        assert "Traceback" not in result.stdout + result.stderr


def test_golden_plans_live_in_the_project_not_in_site_packages(installed: Installed) -> None:
    work = installed.work / "golden-project"
    work.mkdir()
    # no golden folder yet: one located error saying so, not a "missing golden plan" line per model
    missing = _run([installed.capplan, "compile", "--check"], cwd=work)
    assert missing.returncode == 2, missing.stderr
    assert [line for line in missing.stderr.splitlines() if "error[" in line] == [
        f"{work.resolve() / 'golden' / 'plans'}:1:1: error[golden-missing]: the golden folder (golden/plans of the "
        "project root, the nearest folder with .git) does not exist, so there is nothing to check against"]
    assert "missing golden plan" not in missing.stderr
    # no schemas/ in the project (the wheel has no checkout beside it): said once, not "stale" 15 times
    schemas = _run([installed.capplan, "schema", "--check"], cwd=work)
    assert schemas.returncode == 2, schemas.stderr
    assert [line for line in schemas.stderr.splitlines() if "error[" in line] == [
        f"{work.resolve() / 'schemas'}:1:1: error[schemas-missing]: the project's schemas folder (schemas/ of the "
        "nearest folder with .git, else of this one) does not exist, so there is nothing to check against"]
    assert "stale schema" not in schemas.stderr
    updated = _run([installed.capplan, "compile", "--update-golden"], cwd=work)
    assert updated.returncode == 0, updated.stderr
    assert (work / "golden" / "plans" / "mock-echo.json").is_file()
    checked = _run([installed.capplan, "compile", "--check"], cwd=work)
    assert checked.returncode == 0, checked.stderr
    assert not (installed.site / "golden").exists()
    assert not list(installed.site.rglob("golden/plans"))


def test_the_replay_harness_runs_as_a_script(installed: Installed) -> None:
    harness = installed.site / "capplan" / "evals" / "reasoning_replay" / "harness.py"
    shown = _run([installed.python, harness, "--help"], cwd=installed.work)
    assert shown.returncode == 0, shown.stderr
    assert "usage:" in shown.stdout


def test_a_real_provider_call_names_the_run_extra(installed: Installed) -> None:
    work = installed.work / "send"
    work.mkdir()
    # a native route (Anthropic's): only litellm sends it; OpenAI-compatible routes go out directly
    assert _run([installed.capplan, "compile", "--model", "claude-opus-4.7", "--out", "plans"], cwd=work).returncode == 0
    request = REPO / "golden" / "conversations" / "dict_map_tools.json"
    sent = _run([installed.capplan, "send", "--plan", "plans/claude-opus-4.7.json", request], cwd=work)
    assert sent.returncode == 2, sent.stdout + sent.stderr
    # the request is built first (its notes say what the route drops), then sending needs litellm
    assert sent.stderr.strip().splitlines()[-1] == "capplan send needs the run extra: pip install 'capplan[run]'"


def test_the_commands_that_call_no_provider_run_on_the_core_install(installed: Installed) -> None:
    work = installed.work / "core-only"
    work.mkdir()
    assert _run([installed.capplan, "compile", "--out", "plans"], cwd=work).returncode == 0
    request = REPO / "golden" / "conversations" / "signed_thinking_replay.json"
    for args in (["explain", "kimi-k3", "loop"], ["diff", "plans/", "plans/"], ["schema", "overlay"], ["policies"],
                 ["preview", "--plan", "plans/claude-opus-4.7.json", str(request)]):
        done = _run([installed.capplan, *args], cwd=work)
        assert done.returncode == 0, (args, done.stdout + done.stderr)
        assert "Traceback" not in done.stderr and "run extra" not in done.stderr, args
