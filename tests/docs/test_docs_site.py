"""The documentation site builds with `mkdocs build --strict`: every page is in the nav, and no
link or anchor is broken (mkdocs.yml turns each of those into a warning, which --strict fails)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def nav_pages(nav: list[object]) -> set[str]:
    pages: set[str] = set()
    for entry in nav:
        values = entry.values() if isinstance(entry, dict) else [entry]
        for value in values:
            if isinstance(value, list):
                pages |= nav_pages(value)
            else:
                pages.add(str(value))
    return pages


def test_every_docs_page_is_in_the_nav() -> None:
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    listed = nav_pages(config["nav"])
    present = {p.relative_to(REPO / "docs").as_posix() for p in (REPO / "docs").rglob("*.md")}
    assert present - listed == set(), "pages missing from mkdocs.yml's nav"
    assert listed - present == set(), "nav entries without a page"


def test_mkdocs_build_strict_succeeds(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                           str(REPO / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
                          cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "cli" / "index.html").is_file()
