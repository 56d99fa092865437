"""Key rotation: a binding's chain of credentials, advanced when a key hits its own limit.

Keys come from the binding's ``api_keys_env`` (comma-separated), else from the file named by
``key_file_env`` (one key per line, ``#`` comments, the first comma field of a line). The chain
hands the picked key to the call as its ``api_key`` instead of publishing it into
``os.environ``, so concurrent calls on one client can never race on a process-global variable.
A call records which key *index* served it; the key itself is never recorded or logged.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
from collections.abc import Mapping
from pathlib import Path

from capplan.executor.errors import MissingCredentialError
from capplan.executor.gateway.config import credential_problem
from capplan.executor.plan import ProviderBinding
from capplan.executor.rate_limit import cause_chain

log = logging.getLogger(__name__)

#: A key file larger than this is not a key file.
MAX_KEY_FILE_BYTES = 1024 * 1024

#: Texts a provider uses when one key (not the account or the model) is over its limit.
PER_KEY_LIMIT_TEXTS = ("Key limit exceeded", "requires more credits")


def is_per_key_limit(exc: BaseException) -> bool:
    """Whether ``exc`` says the key it was sent with is spent (OpenRouter's per-key 429 or a 402)."""
    for link in cause_chain(exc):
        if getattr(link, "status_code", None) == 402:
            return True
        text = str(link)
        if any(marker in text for marker in PER_KEY_LIMIT_TEXTS):
            return True
    return False


def load_keys(binding: ProviderBinding, env: Mapping[str, str]) -> tuple[tuple[str, ...], str]:
    """The binding's rotation keys and where they came from (a description without any key).

    A key with a space, line break or other control character inside is refused naming the
    variable (and the entry or line), never the key: it would corrupt the header it rides in.
    A rotation variable that is set but lists no key (``,,,``) is refused too.
    """
    if not binding.api_keys_env:
        return (), ""
    raw = env.get(binding.api_keys_env, "")
    listed = [k.strip() for k in raw.split(",") if k.strip()]
    if raw.strip() and not listed:
        # set to something ("," or ",,,": a template never filled in), so not unset: silently falling
        # back to the single key (or the key file) would run with a credential nobody chose
        fallback = f" to use {binding.api_key_env}" if binding.api_key_env else ""
        raise MissingCredentialError(f"{binding.api_keys_env} is set but lists no key (only commas and spaces)",
                                     hint=f"list the keys separated by commas (k1,k2), or unset it{fallback}")
    if listed:
        for position, key in enumerate(listed, 1):
            if problem := credential_problem(key):
                raise MissingCredentialError(f"{binding.api_keys_env} entry {position} {problem}")
        return tuple(listed), binding.api_keys_env
    if binding.key_file_env and env.get(binding.key_file_env, "").strip():
        path = Path(env[binding.key_file_env].strip())
        return _read_key_file(path, binding.key_file_env), f"{binding.key_file_env} ({path})"
    return (), ""


def read_key_file_bytes(path: Path, variable: str, limit: int = MAX_KEY_FILE_BYTES) -> bytes:
    """The bytes of the regular file ``path`` (at most ``limit``), for the variable ``variable``.

    A FIFO would block the open and ``/dev/zero`` never ends, so the path must be a regular
    file before it is opened, the open never blocks (``O_NONBLOCK``), and the descriptor is
    checked again (the path may have been swapped in between). Errors name the variable, not
    the path: a key pasted into the variable would otherwise be printed back.
    """
    def refuse(problem: str) -> MissingCredentialError:
        return MissingCredentialError(f"{variable} names a file that {problem}; it must name a key file (one key per line)")

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise refuse("is not a regular file (a folder, device, FIFO or socket)")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        raise refuse(f"cannot be read ({exc.strerror or type(exc).__name__})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise refuse("is not a regular file (a folder, device, FIFO or socket)")
        if st.st_size > limit:
            raise refuse(f"is {st.st_size} bytes; the limit is {limit}")
        chunks: list[bytes] = []
        size = 0
        while size <= limit:  # a file growing while read is cut at the limit, never read to the end
            chunk = os.read(fd, min(limit + 1 - size, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise refuse(f"cannot be read ({exc.strerror or type(exc).__name__})") from None
    finally:
        os.close(fd)
    if size > limit:
        raise refuse(f"is over the limit of {limit} bytes")
    return b"".join(chunks)


def _read_key_file(path: Path, variable: str) -> tuple[str, ...]:
    try:
        text = read_key_file_bytes(path, variable).decode("utf-8")
    except UnicodeDecodeError:
        raise MissingCredentialError(f"{variable} names a file that is not UTF-8 text") from None
    keys = []
    for number, line in enumerate(text.splitlines(), 1):
        field = line.split("#", 1)[0].split(",", 1)[0].strip()
        if field:
            if problem := credential_problem(field):
                raise MissingCredentialError(f"{variable} names a file whose line {number} {problem.replace('contains', 'holds a key with', 1)}")
            keys.append(field)
    if not keys:
        raise MissingCredentialError(f"{variable} names a file that holds no key")
    return tuple(keys)


class KeyChain:
    """The rotation keys of one client; thread-safe, only ever advances."""

    def __init__(self, keys: tuple[str, ...], source: str) -> None:
        self._keys = keys
        self.source = source
        self._index = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._keys)

    def current(self) -> tuple[int, str]:
        """The index and key the next attempt uses."""
        with self._lock:
            return self._index, self._keys[self._index]

    def advance(self, spent: int) -> bool:
        """Mark key ``spent`` used up; False when no key is left.

        Concurrent calls that failed on the same key advance the chain once, not once each.
        """
        with self._lock:
            if spent < self._index:
                return True  # another call already moved past it
            if self._index + 1 >= len(self._keys):
                return False
            self._index += 1
            log.warning("key %d of %s is over its limit; rotating to key %d of %d",
                        spent, self.source, self._index, len(self._keys))
            return True
