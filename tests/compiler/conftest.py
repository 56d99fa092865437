"""Helpers for compiler tests: temporary data folders and overlay files."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from capplan.presets import data_dir

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, str], Path]:
    """Write a text file under tmp_path and return its path."""

    def _write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    return _write


@pytest.fixture
def bundled_copy(tmp_path: Path) -> Path:
    """A writable copy of the bundled data folder."""
    dest = tmp_path / "data"
    dest.mkdir()
    for name in ("model_presets.yaml", "providers.yaml", "pricing.json"):
        shutil.copy(data_dir() / name, dest / name)
    return dest


@pytest.fixture
def upstream_data_dir() -> Path:
    """The data folder of the tolokaforge-models 1.8.0 wheel (a test dependency)."""
    import tolokaforge_models

    return Path(tolokaforge_models.__file__).parent / "data"
