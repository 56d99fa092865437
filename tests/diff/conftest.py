"""Fixtures for diff tests: the scenario repository, and running the CLI in it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import cli_runner
from tests.diff.scenario import build_repo, git_env


@dataclass(frozen=True)
class Outcome:
    """What one CLI run produced."""

    code: int
    stdout: str
    stderr: str


def invoke(*args: str) -> Outcome:
    """``capplan ARGS`` in-process; an escaped exception (a traceback for a user) fails the test."""
    result = cli_runner.invoke(*args)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.stdout + result.stderr
    return Outcome(result.exit_code, result.stdout, result.stderr)


@pytest.fixture
def clean_git_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The git commands capplan runs see the same pinned, config-free environment as the scenario's."""
    for key in [k for k in os.environ if k.startswith("GIT_")]:
        monkeypatch.delenv(key)
    for key, value in git_env().items():
        monkeypatch.setenv(key, value)


@pytest.fixture
def scenario(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
             clean_git_env: None) -> Iterator[tuple[Path, dict[str, str]]]:
    """The two-commit repository, with the current directory inside it."""
    root = tmp_path / "repo"
    commits = build_repo(root)
    monkeypatch.chdir(root)
    yield root, commits
