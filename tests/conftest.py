"""Fixtures every test folder may use."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fake_provider import FakeProvider


@pytest.fixture
def fake_provider() -> Iterator[FakeProvider]:
    """A :class:`~tests.fake_provider.FakeProvider` with the default answers, stopped after the test."""
    with FakeProvider() as fake:
        yield fake
