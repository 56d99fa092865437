"""The one reader of ``.env`` files: a bounded regular UTF-8 file, parsed by python-dotenv.

The gateway's ``LLM_PROXY_*`` variables and the replay harness's keys both come from here, so
both refuse the same files the same way: a FIFO or device unread, more than
:data:`~capplan.core.input_limits.MAX_CONFIG_BYTES`, or bytes that are not UTF-8 (located by line
and column). Values are never interpolated: a ``$`` in a credential is text.
"""

from __future__ import annotations

import io
from pathlib import Path

from capplan.core.errors import UserError
from capplan.core.input_limits import MAX_CONFIG_BYTES, InputLimitError, read_limited


class DotenvError(UserError):
    """A ``.env`` file that cannot be read as settings."""

    code = "DOTENV"


def read_dotenv(path: Path) -> dict[str, str]:
    """The variables ``path`` sets (unset ones left out); ``{}`` when there is no such file.

    A folder named ``.env`` is a virtualenv, not settings, and is skipped.
    """
    if not path.exists() or path.is_dir():
        return {}
    # imported here for start-up cost only (no cycle): most runs have no .env file to parse
    from dotenv import dotenv_values

    values = dotenv_values(stream=io.StringIO(read_dotenv_text(path)), interpolate=False)
    return {k: v for k, v in values.items() if v is not None}


def read_dotenv_text(path: Path) -> str:
    """The text of a ``.env`` file, or a :class:`DotenvError` located at the problem."""
    try:
        data = read_limited(path, MAX_CONFIG_BYTES)
    except InputLimitError as exc:
        raise DotenvError(str(exc), location=str(path)) from None
    except OSError as exc:
        raise DotenvError(f"cannot be read ({exc.strerror or type(exc).__name__})", location=str(path)) from None
    try:
        return data.decode("utf-8-sig")  # an editor's byte-order mark is not part of the first name
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise DotenvError("the file is not UTF-8 text; save it as UTF-8", location=f"{path}:{line}:{col}") from None
