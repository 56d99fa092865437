"""Produce the outputs the goldens in tests/diff/golden/ hold (shared by the test and the regen command)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.diff.conftest import invoke
from tests.diff.scenario import BASE_ARGS, GOLDEN_CASES, build_repo, git_env, normalise


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(values)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def produce(root: Path) -> dict[str, tuple[int, str]]:
    """File name -> (exit code, normalised stdout) of every golden case, run in a fresh scenario at ``root``."""
    commits = build_repo(root)
    out: dict[str, tuple[int, str]] = {}
    cwd = os.getcwd()
    with _environment(git_env()):
        os.chdir(root)
        try:
            for name, extra in GOLDEN_CASES.items():
                result = invoke(*BASE_ARGS, *extra)
                assert result.stderr == "", result.stderr
                out[name] = (result.code, normalise(result.stdout, commits))
        finally:
            os.chdir(cwd)
    return out


def produce_in_temp() -> dict[str, tuple[int, str]]:
    """:func:`produce` in a throw-away folder."""
    with tempfile.TemporaryDirectory(prefix="capplan-diff-golden-") as tmp:
        return produce(Path(tmp) / "repo")
