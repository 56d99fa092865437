"""The README: at most 10 KB, the two commands at the top verbatim (the second is what CI runs),
a quickstart whose every block runs as written in a fresh project, and links that resolve."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli_runner import BIN

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
SH_BLOCK = re.compile(r"^```sh\n(.*?)^```", flags=re.M | re.S)
EXPECTED_EXIT = re.compile(r"#\s*exit (\d+)\b")

MAIN_JOB = ("python3 -m venv .venv && .venv/bin/python -m pip install -q -e . "
            "&& .venv/bin/capplan compile --out plans/")
TEST_SUITE = ("python3 -m venv .venv && .venv/bin/python -m pip install -q -e '.[test]' "
              "&& .venv/bin/python -m pytest -q -n 2 --dist loadgroup")


def readme() -> str:
    return README.read_text(encoding="utf-8")


def section(text: str, heading: str) -> str:
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else len(text)]


def test_readme_is_at_most_10_kb() -> None:
    assert len(README.read_bytes()) <= 10 * 1024


def test_the_two_commands_come_first_and_verbatim() -> None:
    blocks = SH_BLOCK.findall(readme())
    assert [b.strip() for b in blocks[:2]] == [MAIN_JOB, TEST_SUITE]
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert ci[-1] == TEST_SUITE, "the README's test command is not what .ci/run runs"


def test_readme_links_resolve() -> None:
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme()):
        if not target.startswith(("http://", "https://")):
            assert (REPO / target).exists(), f"README links to {target}, which does not exist"


def quickstart_blocks() -> list[tuple[str, int]]:
    """Each ```sh block of the quickstart and the exit status its last command announces
    (`# exit N` in its comment; 0 when it says none)."""
    blocks = SH_BLOCK.findall(section(readme(), "Quickstart"))
    assert blocks, "the README has no quickstart commands"
    out = []
    for block in blocks:
        last = [line for line in block.splitlines() if line.strip()][-1]
        found = EXPECTED_EXIT.search(last)
        out.append((block, int(found.group(1)) if found else 0))
    return out


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A fresh checkout's working tree as far as the quickstart reads it: the examples, committed."""
    root = tmp_path / "project"
    root.mkdir()
    shutil.copytree(REPO / "examples", root / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-C", str(root)]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "examples"], check=True)
    return root


def test_the_quickstart_runs_as_written(project: Path) -> None:
    # what `. .venv/bin/activate` does for the commands: the running environment's bin first on PATH
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "VIRTUAL_ENV": str(BIN.parent)}
    for block, expected in quickstart_blocks():
        done = subprocess.run(["bash", "-e", "-c", block], cwd=project, env=env, capture_output=True,
                              text=True, timeout=300, check=False)
        output = done.stdout + done.stderr
        assert done.returncode == expected, f"{block}\nexit {done.returncode}, expected {expected}\n{output}"
        assert "Traceback" not in output
    summary = (project / "runs" / "demo" / "summary.md").read_text(encoding="utf-8")
    # the careful agent passes every example task, the sloppy one misses steps, and both cost something (fake prices)
    assert "| mock-careful | inventory_desk | 10 | 100.0% |" in summary and "| mock-sloppy | travel_desk | 10 | 40.0% |" in summary
    assert "cost unknown" not in summary and "of unknown cost" not in summary
    assert len(list((project / "plans").glob("*.json"))) > 2  # the mock plan's own folder left plans/ whole
