"""Fixtures for the fault-injection tests: one loopback upstream per module, a fake clock."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fake_provider import FakeProvider


class FakeClock:
    """A monotonic clock that only moves when the code under test sleeps."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeProvider]:
    server = FakeProvider(name="fault").start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def fault(upstream: FakeProvider, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProvider]:
    # litellm reads a non-pinned provider key from the process environment itself
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-fault")
    upstream.reset(scripts=True)
    yield upstream
    upstream.reset(scripts=True)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()
