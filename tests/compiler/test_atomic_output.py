"""`compile --out` is replaced atomically, holds exactly the compiled set, and refuses what it must not touch."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from capplan.compiler.compile import compile_paths
from tests.compiler.test_cli import invoke

RUN_A = "models:\n" + "".join(f"  a{i}: {{provider: openai, name: gpt-4o}}\n" for i in range(40))
RUN_B = "models:\n" + "".join(f"  b{i}: {{provider: anthropic, name: claude-opus-4.7}}\n" for i in range(40))


def listing(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() if p.is_file() else b"<folder>" for p in sorted(folder.iterdir())}


def test_stale_plans_are_removed_and_listed(tmp_path: Path) -> None:
    out = tmp_path / "plans"
    assert invoke("compile", "--out", str(out))[0] == 0
    code, output = invoke("compile", "--model", "o3", "--out", str(out))
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "o3.json"]
    assert "removed stale plan: gpt-4o.json" in output
    assert json.loads((out / "manifest.json").read_text())["plans"].keys() == {"o3"}


def test_keep_others_keeps_the_rest_and_lists_it_in_the_manifest(tmp_path: Path) -> None:
    out = tmp_path / "plans"
    assert invoke("compile", "--out", str(out))[0] == 0
    (out / "notes.txt").write_text("mine\n")
    code, output = invoke("compile", "--model", "o3", "--out", str(out), "--keep-others")
    assert code == 0 and "removed stale plan" not in output
    assert (out / "gpt-4o.json").is_file() and (out / "notes.txt").read_text() == "mine\n"
    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest["plans"]) == set(compile_paths().plans)


def test_a_folder_of_other_files_is_refused_not_emptied(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("project\n")
    (tmp_path / "src").mkdir()
    code, output = invoke("compile", "--model", "o3", "--out", str(tmp_path))
    assert code == 2
    assert f"--out:1:1: error[out-not-plans]: {tmp_path} holds files that are not capplan plans (README.md, src/)" \
        in output
    assert "--keep-others" in output and "nothing was written" in output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["README.md", "src"]


def test_out_under_a_file_is_a_located_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, output = invoke("compile", "--model", "o3", "--out", str(blocker / "plans"))
    assert code == 2 and f"error[out-unwritable]: {blocker / 'plans'} is under {blocker}, which is a file" in output
    code, output = invoke("compile", "--model", "o3", "--out", str(blocker))
    assert code == 2 and f"'{blocker}' is a file" in output  # click's own check of the option
    assert "Traceback" not in output


def test_plan_name_that_is_a_folder_is_a_located_error_and_nothing_changes(tmp_path: Path) -> None:
    out = tmp_path / "plans"
    assert invoke("compile", "--out", str(out))[0] == 0
    before = listing(out)
    (out / "o3.json").unlink()
    (out / "o3.json").mkdir()
    code, output = invoke("compile", "--out", str(out))
    assert code == 2 and f"error[out-conflict]: {out / 'o3.json'} is a folder" in output
    assert set(listing(out)) == set(before) and (out / "o3.json").is_dir()
    assert (out / "gpt-4o.json").read_bytes() == before["gpt-4o.json"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_parent_is_a_located_error(tmp_path: Path) -> None:
    parent = tmp_path / "ro"
    parent.mkdir()
    parent.chmod(0o555)
    try:
        code, output = invoke("compile", "--model", "o3", "--out", str(parent / "plans"))
    finally:
        parent.chmod(0o755)
    assert code == 2 and "error[out-unwritable]" in output and "Traceback" not in output


def test_read_only_file_system_is_a_located_error(tmp_path: Path) -> None:
    # root ignores permission bits, so the failure is provoked where no user can write: /proc
    code, output = invoke("compile", "--model", "o3", "--out", "/proc/capplan-plans")
    assert code == 2 and "--out:1:1: error[out-unwritable]" in output and "Traceback" not in output


def test_sigkill_mid_compile_leaves_the_old_set_or_the_new_set(tmp_path: Path) -> None:
    """Kill a real compile process at many moments; --out always holds one complete set."""
    (tmp_path / "a.yaml").write_text(RUN_A)
    (tmp_path / "b.yaml").write_text(RUN_B)
    out = tmp_path / "plans"
    cmd = [sys.executable, "-m", "capplan.cli", "compile", "--out", str(out), "--config"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}

    def compile_set(config: str) -> dict[str, bytes]:
        subprocess.run([*cmd, str(tmp_path / config)], env=env, check=True, capture_output=True, timeout=120)
        return listing(out)

    set_b = compile_set("b.yaml")
    set_a = compile_set("a.yaml")
    started = time.monotonic()
    proc = subprocess.Popen([*cmd, str(tmp_path / "b.yaml")], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    proc.wait(timeout=120)
    full = time.monotonic() - started  # one whole run, to spread the kills over it
    outcomes = set()
    for i in range(12):
        current = listing(out)
        target = "a.yaml" if current == set_b else "b.yaml"
        proc = subprocess.Popen([*cmd, str(tmp_path / target)], env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        time.sleep(full * (0.5 + 0.5 * i / 11))  # the later half is where the writing happens
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        after = listing(out)
        assert after in (set_a, set_b), f"mixed or partial set after kill {i}: {sorted(after)[:5]}…"
        outcomes.add("old" if after == current else "new")
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".plans.capplan-")]
    compile_set("a.yaml")  # the next run sweeps what killed runs left beside --out
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".plans.capplan-")] == []
    assert listing(out) == set_a
    assert outcomes, leftovers
    print(f"kills left the old set / the new set: {sorted(outcomes)}")


def test_every_file_is_synced_before_the_swap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import capplan.compiler.plan_output as plan_output

    synced: list[str] = []
    real = plan_output._fsync_file

    def record(path: Path) -> None:
        synced.append(path.name)
        real(path)

    monkeypatch.setattr(plan_output, "_fsync_file", record)
    out = tmp_path / "plans"
    assert invoke("compile", "--out", str(out))[0] == 0
    files = sorted(p.name for p in out.iterdir())
    # each written file once, then the folder itself and its parent
    assert sorted(synced[:len(files)]) == files and len(synced) == len(files) + 2


def test_a_failed_sync_changes_nothing_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import capplan.compiler.plan_output as plan_output

    out = tmp_path / "plans"
    assert invoke("compile", "--model", "o3", "--out", str(out))[0] == 0
    before = listing(out)
    real = plan_output._fsync_file

    def failing(path: Path) -> None:
        if path.name == "gpt-4o.json":
            raise OSError(5, "Input/output error")
        real(path)

    monkeypatch.setattr(plan_output, "_fsync_file", failing)
    code, output = invoke("compile", "--out", str(out))
    assert code == 2
    assert f"{out}: cannot write the plans: Input/output error" in output and "nothing was changed" in output
    assert listing(out) == before
    assert [p.name for p in tmp_path.iterdir()] == ["plans"], "the half-written folder was left behind"
