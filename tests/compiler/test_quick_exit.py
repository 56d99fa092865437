"""The console script ends short commands without interpreter teardown, losing nothing on the way."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

CAPPLAN = str(Path(sys.executable).parent / "capplan")


def run_script(body: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(body)], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)


def test_lint_findings_reach_both_streams_with_the_exit_status(tmp_path: Path) -> None:
    presets = tmp_path / "model_presets.yaml"
    presets.write_text('requires_capplan: "=>0.1"\npresets: {}\n', encoding="utf-8")
    done = subprocess.run([CAPPLAN, "lint", str(presets)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stdout == f"{presets}:1:1: error[wrong-type]: requires_capplan: not a version specifier: '=>0.1'\n"
    assert done.stderr == "capplan lint: 1 file(s) checked: 1 error(s), 0 warning(s)\n"


def test_compile_writes_every_plan_and_says_so(tmp_path: Path) -> None:
    out = tmp_path / "plans"
    done = subprocess.run([CAPPLAN, "compile", "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    written = sorted(p.name for p in out.iterdir())
    assert done.stdout.startswith(f"compiled {len(written) - 1} plan(s) into {out}")
    assert "manifest.json" in written and len(written) > 10


def test_exit_handlers_still_run(tmp_path: Path) -> None:
    done = run_script("""
        import atexit, sys
        atexit.register(lambda: print("handler ran", flush=True))
        sys.argv = ["capplan", "schema", "--help"]
        from capplan.cli import run
        run()
    """, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith("handler ran") and "Usage: capplan schema" in done.stdout


def test_a_running_thread_gets_the_ordinary_exit(tmp_path: Path) -> None:
    # os._exit would end the thread mid-way; the ordinary exit waits for it. The thread prints only
    # once the main thread has finished (the interpreter's shutdown, which joins it), so it is alive
    # whenever the command ends, however slowly the machine runs the command (bounded: 120 s)
    done = run_script("""
        import sys, threading, time

        def after_main():
            for _ in range(12_000):
                if not threading.main_thread().is_alive():
                    print("thread done", flush=True)
                    return
                time.sleep(0.01)

        threading.Thread(target=after_main).start()
        sys.argv = ["capplan", "lint", "--help"]
        from capplan.cli import run
        run()
    """, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "thread done" in done.stdout


def test_other_commands_and_failures_keep_their_status(tmp_path: Path) -> None:
    done = run_script("""
        import sys
        sys.argv = ["capplan", "compile", "--no-such-option"]
        from capplan.cli import run
        run()
    """, tmp_path)
    assert done.returncode == 2 and "Error: No such option '--no-such-option'." in done.stderr
    done = run_script("""
        import sys
        sys.argv = ["capplan", "guard", "--help"]
        from capplan.cli import run
        run()
    """, tmp_path)
    assert done.returncode == 0 and "Usage: capplan guard" in done.stdout


def test_python_dash_m_is_the_console_script(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "capplan.cli", "lint", "--help"], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path, env={**os.environ})
    assert done.returncode == 0 and "Usage: python -m capplan.cli lint" in done.stdout


def test_schema_files_are_whole(tmp_path: Path) -> None:
    out = tmp_path / "schemas"
    done = subprocess.run([CAPPLAN, "schema", "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    repo_schemas = Path(__file__).resolve().parents[2] / "schemas"
    written = sorted(p.name for p in out.iterdir())
    assert written == sorted(p.name for p in repo_schemas.iterdir() if p.suffix == ".json")
    for name in written:
        assert (out / name).read_bytes() == (repo_schemas / name).read_bytes(), name
