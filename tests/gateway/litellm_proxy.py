"""Start and stop a real LiteLLM proxy (``litellm --config … --host 127.0.0.1 --port P``).

The proxy comes from the ``test`` extra (the ``litellm[proxy]`` requirements, listed by hand).
It takes 10–30 s to start, so the gateway tests start it once per session.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

START_TIMEOUT_S = 120.0
#: where a session keeps its one gateway lane (``tests/gateway/conftest.py``'s ``session_gateway``). It
#: lives here, in a module imported under one name, because pytest imports a conftest under a name of
#: its own (``gateway.conftest``) while other folders import it as ``tests.gateway.conftest``: a key
#: made in the conftest would be two keys, and the session would start two proxies.
SESSION_LANE = pytest.StashKey[Any]()


def free_port() -> int:
    """A currently free loopback port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def litellm_executable() -> str:
    """The ``litellm`` console script beside this interpreter."""
    candidate = Path(sys.executable).parent / "litellm"
    found = str(candidate) if candidate.exists() else shutil.which("litellm")
    if not found:
        raise RuntimeError("the litellm proxy is not installed; install the test extra: pip install -e '.[test]'")
    return found


class LiteLLMProxy:
    """A proxy process; ``base`` is its URL once ``start`` returned."""

    def __init__(self, config: Path, master_key: str, log_path: Path) -> None:
        self.config = config
        self.master_key = master_key
        self.log_path = log_path
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.started_in_s = 0.0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_MODE": "PRODUCTION",
               "DISABLE_SCHEMA_UPDATE": "true"}
        for name in list(env):  # the proxy must not route through a gateway itself
            if name.startswith("LLM_PROXY_"):
                del env[name]
        began = time.monotonic()
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [litellm_executable(), "--config", str(self.config), "--host", "127.0.0.1", "--port", str(self.port)],
                stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
            )
        deadline = began + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"litellm proxy exited with {self.process.returncode}:\n{self._tail()}")
            try:
                with urllib.request.urlopen(f"{self.base}/health/liveliness", timeout=2) as response:  # noqa: S310
                    if response.status == 200:
                        self.started_in_s = time.monotonic() - began
                        return
            except OSError:
                pass
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"litellm proxy did not answer within {START_TIMEOUT_S:.0f}s:\n{self._tail()}")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=15)

    def _tail(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""
