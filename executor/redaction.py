"""Credential values kept out of every printed or written text.

A :class:`Redactor` knows the credential *values* a client holds (the gateway key, rotation
keys, expanded ``${secret:NAME}`` header values, a pinned provider key) and replaces each with
``<redacted>`` wherever text leaves the client: log lines, exception messages, previews. Name
patterns alone are not enough: a gateway header such as ``X-Order-Id`` carries a secret under an
innocent name, and a provider's error body may echo the key it was sent.

URLs are scrubbed by shape as well, whoever holds the value: the userinfo of ``scheme://user:pass@host``
and the value of a key-like query parameter (``api_key``, ``key``, ``token``, ...) never leave the
client, even when they came from ``--api-base`` and were never registered.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable
from typing import Any

REDACTED = "<redacted>"

#: Shorter values are not redacted: replacing "1" or "ab" everywhere would shred text and hide
#: nothing a reader could use.
MIN_SECRET_CHARS = 6

# userinfo: everything between "scheme://" and the "@" that precedes the host
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/?#@\s'\"<>]+@")
# a key-like query (or fragment) parameter; the value runs to the next separator
_URL_KEY_PARAM = re.compile(r"(?i)([?&#;](?:api[_-]?key|key|token|access[_-]?token)=)[^&#;\s'\"<>]*")


def redact_url(text: str) -> str:
    """``text`` with URL userinfo and key-like query parameter values replaced."""
    if "=" not in text and "@" not in text:
        return text
    text = _URL_USERINFO.sub(lambda m: f"{m.group(1)}{REDACTED}@", text)
    return _URL_KEY_PARAM.sub(lambda m: f"{m.group(1)}{REDACTED}", text)


def _url_leaks(text: str) -> bool:
    return redact_url(text) != text


class Redactor:
    """Replaces known credential values in text."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        values = sorted({s for s in secrets if s and len(s) >= MIN_SECRET_CHARS}, key=len, reverse=True)
        self._values = tuple(values)
        self._pattern = re.compile("|".join(re.escape(v) for v in values)) if values else None

    def __bool__(self) -> bool:
        return self._pattern is not None

    def extend(self, secrets: Iterable[str]) -> Redactor:
        """A redactor that also knows ``secrets``."""
        return Redactor((*self._values, *secrets))

    def text(self, text: str) -> str:
        """``text`` with every known credential and every URL credential replaced."""
        if not text:
            return text
        if self._pattern is not None:
            text = self._pattern.sub(REDACTED, text)
        return redact_url(text)

    def leaks(self, text: str) -> bool:
        """Whether ``text`` still contains a known credential or a URL credential."""
        return (self._pattern is not None and self._pattern.search(text) is not None) or _url_leaks(text)

    def value(self, value: Any) -> Any:
        """A copy of a JSON-like value with credentials replaced in every string."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.value(v) for v in value]
        return value

    def scrub_exception(self, exc: BaseException) -> None:
        """Replace credentials inside ``exc`` and its ``__cause__`` chain, in place.

        Rewrites string ``args`` and the ``message`` attribute litellm and openai exceptions
        render from, so the chain (and with it the typed classification) survives intact.
        """
        seen: set[int] = set()
        link: BaseException | None = exc
        while link is not None and id(link) not in seen:
            seen.add(id(link))
            link.args = tuple(self.value(a) for a in link.args)
            for attr in ("message", "_message", "body"):
                current = getattr(link, attr, None)
                if isinstance(current, (str, dict, list)):
                    try:
                        setattr(link, attr, self.value(current))
                    except AttributeError:
                        pass
            link = link.__cause__ if link.__cause__ is not None else link.__context__


# --- log records -------------------------------------------------------------------------------
# litellm and the openai SDK log request options, headers and provider error bodies at DEBUG, in
# their own loggers. Every log record in the process is therefore scrubbed when it is created,
# against every credential any client registered; a record without a known value is untouched.

_registry_lock = threading.Lock()
_registered: set[str] = set()
_process_redactor = Redactor()
_installed = False


def register_secrets(secrets: Iterable[str]) -> None:
    """Make every log record created from now on free of ``secrets`` (process-wide, idempotent)."""
    global _process_redactor, _installed
    fresh = {s for s in secrets if s and len(s) >= MIN_SECRET_CHARS} - _registered
    if not fresh and _installed:
        return
    with _registry_lock:
        _registered.update(fresh)
        _process_redactor = Redactor(_registered)
        if not _installed:
            previous = logging.getLogRecordFactory()

            def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
                record = previous(*args, **kwargs)
                # always scrubbed: URL credentials are found by shape, without a registered value
                _scrub_record(record, _process_redactor)
                return record

            logging.setLogRecordFactory(factory)
            _installed = True


def redact_text(text: str) -> str:
    """``text`` free of every credential registered in this process and of URL credentials."""
    return _process_redactor.text(text)


def _scrub_record(record: logging.LogRecord, redactor: Redactor) -> None:
    try:
        message = record.getMessage()
    except Exception:  # noqa: BLE001 - a malformed record is the logging module's to report
        return
    if redactor.leaks(message):
        record.msg, record.args = redactor.text(message), None
    if record.exc_info and record.exc_info[1] is not None:
        redactor.scrub_exception(record.exc_info[1])
