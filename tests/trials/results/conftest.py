"""The two hostile runs are built once per session: every view and report test reads them, none writes them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.trials.results.hostile_runs import HostileRuns, build


@pytest.fixture(scope="session")
def hostile_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostileRuns]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield build(tmp_path_factory.mktemp("hostile-runs"), monkeypatch)
