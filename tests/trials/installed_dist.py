"""A distribution "installed" for one test: a package and its ``.dist-info`` in a folder put on ``sys.path``.

``importlib.metadata`` finds it exactly as it finds one pip installed, so a task file may name its
module under ``requires:``; the folder leaves ``sys.path`` (and the module ``sys.modules``) with the test.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest


def install(site: Path, monkeypatch: pytest.MonkeyPatch, *, dist: str, package: str, source: str) -> Path:
    """``package`` (one ``__init__.py`` holding ``source``) as the only module of distribution ``dist``."""
    (site / package).mkdir(parents=True)
    (site / package / "__init__.py").write_text(source)
    info = site / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "top_level.txt").write_text(package + "\n")
    (info / "RECORD").write_text(f"{package}/__init__.py,,\n{info.name}/METADATA,,\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, package, raising=False)
    return site
