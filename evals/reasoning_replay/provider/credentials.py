"""Where keys come from. Read at call time, registered for redaction, never stored.

- ``nous``: ``NOUS_API_KEY``, as every other route's key variable (the environment, then
  ``~/.hermes/.env``); when it is unset and a Hermes login left ``~/.hermes/auth.json``, that
  file's ``providers.nous.agent_key``, falling back to ``access_token``. A live install rotates
  that key, so on a 401 the file is read once more (after a short wait when it has not changed yet).
- every other route: the process environment first, then ``~/.hermes/.env``.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Protocol

from capplan.core.dotenv_file import DotenvError, read_dotenv
from capplan.evals.reasoning_replay import redact
from capplan.evals.reasoning_replay.errors import MissingCredential
from capplan.evals.reasoning_replay.routes import NOUS_AUTH, Route

# Seconds to wait for a rotated Portal key before the single re-read after a 401.
REFRESH_WAIT_SECONDS = 15.0

#: the nous route's key variable, named as capplan names every provider's (OPENROUTER_API_KEY, …)
NOUS_KEY_ENV = "NOUS_API_KEY"


def hermes_dir() -> Path:
    """``~/.hermes``, resolved on every use so a changed HOME is honoured."""
    return Path.home() / ".hermes"


class KeySource(Protocol):
    """Something that yields the current key for a route."""

    label: str

    def read(self) -> str:
        """The key now; raises MissingCredential naming where it looked."""

    def refresh(self, rejected: str) -> str | None:
        """A replacement after a 401, or None when this source cannot offer one."""


class EnvKey:
    """A key held in an environment variable or, failing that, in ``~/.hermes/.env``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.label = name

    def read(self) -> str:
        value = os.environ.get(self.name) or _dotenv_value(hermes_dir() / ".env", self.name)
        if not value:
            raise MissingCredential(f"{self.name} is not set in the environment or in "
                                    f"{hermes_dir() / '.env'}; export it or add it to that file")
        redact.register(value)
        return value

    def refresh(self, rejected: str) -> str | None:
        return None


def _dotenv_value(path: Path, name: str) -> str:
    """``name`` as ``path`` (a dotenv file) sets it, read by capplan's one ``.env`` reader; "" if unset."""
    try:
        return read_dotenv(path).get(name, "")
    except DotenvError as exc:  # located (path:line:col) and free of values, like every credential error
        raise MissingCredential(f"{name} cannot be read from {exc.location}: {exc.message}") from None


class NousAuthKey:
    """The nous route's key: ``NOUS_API_KEY``, else the agent key a Hermes login keeps in ``~/.hermes/auth.json``."""

    label = f"{NOUS_KEY_ENV} (else ~/.hermes/auth.json providers.nous)"

    def __init__(self) -> None:
        self._from_file = False

    def read(self) -> str:
        value = os.environ.get(NOUS_KEY_ENV) or _dotenv_value(hermes_dir() / ".env", NOUS_KEY_ENV)
        if value:
            redact.register(value)
            return value
        path = hermes_dir() / "auth.json"
        if not path.exists():
            raise MissingCredential(f"{NOUS_KEY_ENV} is not set (or empty); the nous route reads its API key from "
                                    f"it: export {NOUS_KEY_ENV}=<key>, or pass --key-env VAR to read another variable")
        self._from_file = True
        try:
            data = json.loads(path.read_text(encoding="utf-8-sig"))
        except (OSError, ValueError) as exc:
            raise MissingCredential(f"{NOUS_KEY_ENV} is not set, and {path} is not readable JSON "
                                    f"({type(exc).__name__}); export {NOUS_KEY_ENV}=<key>") from None
        nous = ((data.get("providers") or {}).get("nous") or {}) if isinstance(data, dict) else {}
        value = str(nous.get("agent_key") or nous.get("access_token") or "") if isinstance(nous, dict) else ""
        if not value:
            raise MissingCredential(f"{NOUS_KEY_ENV} is not set, and {path} has no providers.nous.agent_key or "
                                    f"access_token; export {NOUS_KEY_ENV}=<key>")
        redact.register(value)
        return value

    def refresh(self, rejected: str) -> str | None:
        if not self._from_file:  # a variable does not rotate while the run reads it
            return None
        value = self.read()
        if value == rejected:
            time.sleep(REFRESH_WAIT_SECONDS)  # the installer may be mid-rotation
            value = self.read()
        return value


class NoKey:
    """A keyless local server (llama.cpp, vLLM without auth)."""

    label = "no key"

    def read(self) -> str:
        return ""

    def refresh(self, rejected: str) -> str | None:
        return None


def auth_headers(route: Route, key: str) -> dict[str, str]:
    """The header that carries ``key`` on ``route`` (never the URL: URLs end up in messages)."""
    if not key:
        return {}
    if route.kind == "gemini":
        return {"x-goog-api-key": key}
    return {"Authorization": f"Bearer {key}"}


def key_source(route: Route) -> KeySource:
    """The credential source a route names."""
    if route.key == NOUS_AUTH:
        return NousAuthKey()
    if route.key:
        return EnvKey(route.key)
    return NoKey()
