"""Fixtures: a private HOME, loopback-only networking, servers that stop in teardown, and an
in-process runner for the harness's ``main(argv)``."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from capplan.evals.reasoning_replay import redact  # noqa: E402
from capplan.evals.reasoning_replay.commands.cli import main  # noqa: E402
from capplan.evals.reasoning_replay.provider import credentials  # noqa: E402

from tests.fake_provider import FakeProvider, Reply, Request  # noqa: E402

KEY_VARS = ("_API_KEY", "HF_TOKEN")


class Provider(Protocol):
    """A scripted provider of ``fakes/``: answers each request from its own state."""

    def handle(self, request: Request) -> Reply: ...


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME is a temp folder, so ~/.hermes/.env and auth.json are test files; no real keys leak in."""
    path = tmp_path / "home"
    (path / ".hermes").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(path))
    for name in list(os.environ):
        if name.endswith(KEY_VARS):
            monkeypatch.delenv(name)
    monkeypatch.setattr(credentials, "REFRESH_WAIT_SECONDS", 0.0)
    yield path
    redact.forget_all()


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Any connection attempt off 127.0.0.1 fails the test (the harness would swallow the error)."""
    attempts: list[Any] = []
    real_connect = socket.socket.connect

    def guarded(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else address
        if self.family in (socket.AF_INET, socket.AF_INET6) and host not in ("127.0.0.1", "::1", "localhost"):
            attempts.append(address)
            raise OSError(f"test guard: no network beyond loopback ({address})")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
    yield attempts
    assert not attempts, f"tried to reach the network: {attempts}"


@pytest.fixture
def serve() -> Iterator[Callable[[Provider], FakeProvider]]:
    """Start a fake provider answering from ``provider``; every one is stopped at teardown."""
    servers: list[FakeProvider] = []

    def start(provider: Provider) -> FakeProvider:
        server = FakeProvider(provider.handle).__enter__()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.__exit__(None, None, None)


@dataclass
class Outcome:
    code: int
    out: str
    err: str


@pytest.fixture
def harness(capsys: pytest.CaptureFixture[str]) -> Callable[..., Outcome]:
    """Run ``main(argv)`` in this process and capture what it printed."""

    def run(*argv: str) -> Outcome:
        capsys.readouterr()
        code = main([str(a) for a in argv])
        captured = capsys.readouterr()
        return Outcome(code, captured.out, captured.err)

    return run


@pytest.fixture
def closed_port() -> int:
    """A loopback port with nothing listening (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
