"""A real llama.cpp ``llama-server`` on loopback, serving one tiny template model from the cache.

The cache is what ``tools/realpeer/build_llama_server.sh`` builds (``$CAPPLAN_REALPEER_CACHE``,
default ``~/.cache/capplan/realpeer``): ``bin/llama-server`` and ``models/<name>.gguf`` with
``models/models.json`` naming each model's chat template. The models have random weights, so
what they generate is noise; what the tests read is what the server does with a request: the
chat template's rendering (``prompt_tokens``), grammar-constrained tool calls, and the
``reasoning_content`` it parses out of the output.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

BUILD_SCRIPT = "tools/realpeer/build_llama_server.sh"


def cache_dir() -> Path:
    """Where the build script put the server and the models."""
    env = os.environ.get("CAPPLAN_REALPEER_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "capplan" / "realpeer"


def missing_reason() -> str | None:
    """Why the real peer cannot run here (``None`` when it can), naming the command that fixes it."""
    cache = cache_dir()
    for need in (cache / "bin" / "llama-server", cache / "models" / "models.json"):
        if not need.is_file():
            return f"real peer not built: {need} is missing; run {BUILD_SCRIPT} (20-40 min once, then cached)"
    return None


def models() -> dict[str, dict[str, str]]:
    """name -> the manifest entry (file, template, template_sha256)."""
    manifest = json.loads((cache_dir() / "models" / "models.json").read_text(encoding="utf-8"))
    return {entry["name"]: entry for entry in manifest["models"]}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class LlamaServer:
    """``llama-server`` for one model, bound to 127.0.0.1; stopped (and waited for) on exit."""

    model: str
    startup_s: float = 60.0
    process: subprocess.Popen[bytes] | None = None
    port: int = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> Self:
        entry = models()[self.model]
        self.port = _free_port()
        log = cache_dir() / f"server-{self.model}.log"
        argv = [str(cache_dir() / "bin" / "llama-server"), "-m", str(cache_dir() / "models" / entry["file"]),
                "--host", "127.0.0.1", "--port", str(self.port), "--jinja", "--ctx-size", "8192",
                "--parallel", "1", "--threads", "1", "--reasoning-format", "deepseek", "--seed", "7"]
        with log.open("wb") as sink:
            self.process = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + self.startup_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"llama-server exited with {self.process.returncode}; see {log}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as reply:
                    if reply.status == 200:
                        return self
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.2)
        self.__exit__()
        raise RuntimeError(f"llama-server did not become healthy in {self.startup_s:.0f} s; see {log}")

    def __exit__(self, *exc: Any) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)

    def chat(self, body: dict[str, Any]) -> dict[str, Any]:
        """One raw ``/v1/chat/completions`` exchange (stdlib HTTP, nothing of capplan's)."""
        request = urllib.request.Request(self.base + "/chat/completions", data=json.dumps(body).encode("utf-8"),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as reply:
            answer: dict[str, Any] = json.loads(reply.read())
            return answer
