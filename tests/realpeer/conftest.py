"""The real-peer lane: tests against llama.cpp's llama-server built by tools/realpeer/.

Every module here is marked ``realpeer`` (``pytest -m realpeer`` runs the lane alone). The lane
runs whenever the cache exists, in the default run too; without it each test is skipped with
the reason and the command that builds the cache, never failed.
"""

from __future__ import annotations

import pytest

from tests.realpeer.peer import missing_reason


@pytest.fixture(autouse=True, scope="session")  # before the module-scoped servers
def _peer_built() -> None:
    reason = missing_reason()
    if reason is not None:
        pytest.skip(reason)
