"""Expected-error goldens: each bad input beside the exact output of `capplan lint` on it.

Regenerate (then review the diff) with:
    python -m tests.compiler.expected_errors --update
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests.cli_runner import invoke

REPO = Path(__file__).resolve().parents[2]
BAD = Path("tests/compiler/bad_inputs")
REGEN = "python -m tests.compiler.expected_errors --update"


def cases() -> list[Path]:
    """Every bad input, relative to the repo root (diagnostics name files as given)."""
    return sorted(p.relative_to(REPO) for p in (REPO / BAD).iterdir() if p.suffix in (".yaml", ".json"))


def lint_output(rel: Path) -> tuple[int, str]:
    """Exit code and output of `capplan lint FILE`, run from the repo root."""
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        result = invoke("lint", str(rel))
    finally:
        os.chdir(cwd)
    return result.exit_code, result.output


def expected_path(rel: Path) -> Path:
    return REPO / rel.with_suffix(".expected")


def render(code: int, output: str) -> str:
    return f"exit {code}\n{output}"


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit(f"usage: {REGEN}")
    for rel in cases():
        expected_path(rel).write_text(render(*lint_output(rel)), encoding="utf-8")
        print(f"wrote {expected_path(rel).relative_to(REPO)}")
