"""docs/cli.md is exactly what tools/cli_reference.py generates from every command's --help."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
REGENERATE = "python tools/cli_reference.py"


def test_cli_reference_is_up_to_date() -> None:
    done = subprocess.run([sys.executable, "tools/cli_reference.py", "--check"], cwd=REPO,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, (f"docs/cli.md is stale: regenerate it with `{REGENERATE}` and commit it\n"
                                  f"{done.stdout}{done.stderr}")


def test_cli_reference_covers_every_command() -> None:
    from capplan.cli import COMMANDS

    page = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    for name in COMMANDS:
        assert f"## `capplan {name}`" in page, f"docs/cli.md has no section for `capplan {name}`"
    for sub in ("trial run", "trial report", "gateway check", "replay run"):
        assert f"## `capplan {sub}`" in page
