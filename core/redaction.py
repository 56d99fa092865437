"""Credential values kept out of every printed or written text: the one redactor.

A :class:`Redactor` knows the credential *values* in play (every bound key variable's value, the
variable litellm itself reads for a binding that names none, every rotation key, the gateway
key, every ``LLM_PROXY_HEADERS`` value whether literal or ``${secret:NAME}``, URL userinfo) and
replaces each with ``<redacted>`` wherever text leaves the process: log lines, exception
messages, previews, command output, trial records, Ray worker output. It matches by value, not
by shape: a key need not start with ``sk-``, and a gateway header such as ``X-Team-Token``
carries a secret under any name. Each value is also matched in the forms an echo takes: JSON
string escaping, percent-encoding, and (for URL userinfo) the HTTP Basic credential an HTTP
client derives from it.

URLs are scrubbed by shape as well, whoever holds the value: the userinfo of ``scheme://user:pass@host``
and the value of a key-like query parameter (``api_key``, ``key``, ``token``, ...) never leave the
process, even when they came from ``--api-base`` and were never registered. Call kwargs are
also scrubbed by field name (:func:`redact_kwargs`): the ``api_key`` field and secret-looking
header names, for values that came from somewhere no one registered.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import re
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TextIO
from urllib.parse import quote, unquote, urlsplit

from capplan.core.reference_mode import reference_mode

REDACTED = "<redacted>"

#: Shorter values are not redacted: replacing "1" or "ab" everywhere would shred text and hide
#: nothing a reader could use.
MIN_SECRET_CHARS = 6

# userinfo: everything between "scheme://" and the "@" that precedes the host
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/?#@\s'\"<>]+@")
# a key-like query (or fragment) parameter; the value runs to the next separator. One already
# replaced is left alone, so scrubbing text twice (a command's output, then its stream) is a no-op.
_URL_KEY_PARAM = re.compile(r"(?i)([?&#;](?:api[_-]?key|key|token|access[_-]?token)=)(?!<redacted>)[^&#;\s'\"<>]*")
# call kwargs' header names whose value is a credential whatever it is
_SECRET_HEADER = re.compile(r"(?i)authorization|api[-_]?key|token|secret|cookie|password")


def redact_url(text: str) -> str:
    """``text`` with URL userinfo and key-like query parameter values replaced."""
    if "=" not in text and "@" not in text:
        return text
    text = _URL_USERINFO.sub(lambda m: f"{m.group(1)}{REDACTED}@", text)
    return _URL_KEY_PARAM.sub(lambda m: f"{m.group(1)}{REDACTED}", text)


def _url_leaks(text: str) -> bool:
    return redact_url(text) != text


def url_credentials(url: str | None) -> tuple[str, ...]:
    """The credential values a URL carries: its userinfo parts and the Basic credential made of them.

    An HTTP client sends ``http://user:pass@host`` as ``Authorization: Basic base64(user:pass)``,
    so an upstream that echoes its headers quotes that form, never the URL.
    """
    if not url or "@" not in url:
        return ()
    try:
        parts = urlsplit(url.strip())
        user, password = parts.username, parts.password
    except ValueError:
        return ()
    values: list[str] = []
    for raw in (user, password):
        if raw:
            values += [raw, unquote(raw)]
    if user:  # http://TOKEN@host travels as Basic base64("TOKEN:")
        password = password or ""
        for pair in (f"{user}:{password}", f"{unquote(user)}:{unquote(password)}"):
            values += [pair, base64.b64encode(pair.encode("utf-8")).decode("ascii")]
    return tuple(dict.fromkeys(values))


def _echo_forms(value: str) -> set[str]:
    """``value`` as it appears in the texts that quote it: verbatim, JSON-escaped, percent-encoded."""
    forms = {value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1], quote(value, safe="")}
    return {f for f in forms if len(f) >= MIN_SECRET_CHARS}


def _json_quoted(form: str) -> str:
    """``form`` as it stands inside a JSON string written with ``ensure_ascii=False``."""
    return json.dumps(form, ensure_ascii=False)[1:-1]


def redact_kwargs(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of call kwargs with the ``api_key`` field and secret-looking header values replaced by name."""
    out = dict(kwargs)
    if "api_key" in out:
        out["api_key"] = REDACTED
    headers = out.get("extra_headers")
    if isinstance(headers, Mapping):
        out["extra_headers"] = {k: (REDACTED if _SECRET_HEADER.search(k) else v) for k, v in headers.items()}
    return out


#: values :meth:`Redactor.value` returns as they are
_LEAVES = frozenset({int, float, bool, type(None)})


def check_text(value: Any) -> str | None:
    """``value`` as the JSON text :meth:`Redactor.may_change` searches; None when it is not JSON data."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return None


class Redactor:
    """Replaces known credential values in text."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        given = {s.strip() for s in secrets if s and len(s.strip()) >= MIN_SECRET_CHARS}
        self._given = tuple(sorted(given))
        forms = set().union(*(_echo_forms(s) for s in given)) if given else set()
        # longest first, so a value that contains another is replaced whole
        values = sorted(forms, key=lambda v: (-len(v), v))
        self._pattern = re.compile("|".join(re.escape(v) for v in values)) if values else None
        # each form as a JSON text quotes it (a string is escaped character by character, so a string
        # holding a form has that form's escape in its JSON): what :meth:`may_change` looks for in one search
        quoted = forms | {_json_quoted(f) for f in forms}
        self._json_pattern = (re.compile("|".join(re.escape(v) for v in sorted(quoted, key=lambda v: (-len(v), v))))
                              if quoted else None)

    def __bool__(self) -> bool:
        return self._pattern is not None

    @property
    def secrets(self) -> tuple[str, ...]:
        """The values this redactor was given (to hand to another redactor, never to print)."""
        return self._given

    def extend(self, secrets: Iterable[str]) -> Redactor:
        """A redactor that also knows ``secrets``."""
        return Redactor((*self._given, *secrets))

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
        """A copy of a JSON-like value with credentials replaced in every string, mapping keys included."""
        # exact types first: a finished trial's records are thousands of plain nodes, walked on the
        # driver's thread once per trial; subclasses take the isinstance path below, as before
        kind = type(value)
        if kind is str:
            return self.text(value)
        if kind is dict:
            return {(self.text(k) if isinstance(k, str) else k): self.value(v) for k, v in value.items()}
        if kind is list:
            return [self.value(v) for v in value]
        if kind in _LEAVES:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {(self.text(k) if isinstance(k, str) else k): self.value(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.value(v) for v in value]
        return value

    def may_change(self, value: Any, text: str | None = None) -> bool:
        """Whether :meth:`value` could find anything to replace in ``value``; False only when it would not.

        One search instead of a walk (seam *record redaction check*; always True in the reference mode,
        so every record is walked; ``benchmarks/trial_loop.py``: a finished trial's records are thousands
        of nodes, and walking them all was the biggest single cost of a trial on the driver's thread):
        ``value`` is written as JSON text once, and only a text that holds a credential form, URL
        userinfo or a key-like parameter is worth a walk (a string that holds one shows it in the text,
        escaped as JSON escapes it). A match the walk finds nothing for (one spanning two strings, or in
        a non-string key) costs the walk, never a different answer; so does a value that is not JSON data.
        ``text``: ``value``'s :func:`check_text`, when the process that made ``value`` wrote it already.
        """
        if reference_mode():
            return True
        if text is None:
            text = check_text(value)
            if text is None:  # not JSON data after all: the walk says what it holds
                return True
        # each URL pattern needs a literal its text must hold: a substring test rules most texts out at once
        return ((self._json_pattern is not None and self._json_pattern.search(text) is not None)
                or ("=" in text and _URL_KEY_PARAM.search(text) is not None)
                or ("://" in text and _URL_USERINFO.search(text) is not None))

    def kwargs(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """Call kwargs safe to print: credential fields by name (:func:`redact_kwargs`), then every value."""
        out: dict[str, Any] = self.value(redact_kwargs(kwargs))
        return out

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


# --- the process-wide redactor ------------------------------------------------------------------
# litellm and the openai SDK log request options, headers and provider error bodies at DEBUG, in
# their own loggers. Every log record in the process is therefore scrubbed when it is created,
# against every credential any client registered; a record without a known value is untouched.
# The same registry scrubs what leaves the process by other ways: command output, trial records,
# a Ray worker's stdout and stderr.

_registry_lock = threading.Lock()
_registered: set[str] = set()
_process_redactor = Redactor()
_installed = False


def register_secrets(secrets: Iterable[str]) -> None:
    """Make every log record created from now on free of ``secrets`` (process-wide, idempotent)."""
    global _process_redactor, _installed
    fresh = {s.strip() for s in secrets if s and len(s.strip()) >= MIN_SECRET_CHARS} - _registered
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


def process_redactor() -> Redactor:
    """The redactor that knows every credential registered in this process so far."""
    return _process_redactor


def redact_text(text: str) -> str:
    """``text`` free of every credential registered in this process and of URL credentials."""
    return _process_redactor.text(text)


def redact_value(value: Any) -> Any:
    """A copy of a JSON-like value free of every credential registered in this process."""
    return _process_redactor.value(value)


def _scrub_record(record: logging.LogRecord, redactor: Redactor) -> None:
    try:
        message = record.getMessage()
    except Exception:  # noqa: BLE001 - a malformed record is the logging module's to report
        return
    if redactor.leaks(message):
        record.msg, record.args = redactor.text(message), None
    if record.exc_info and record.exc_info[1] is not None:
        redactor.scrub_exception(record.exc_info[1])


# --- streams ------------------------------------------------------------------------------------


class RedactingStream(io.TextIOBase):
    """A text stream that writes through to ``target`` with every registered credential replaced.

    Text is held back until a line ends (or ``flush``), so a value split across two ``write``
    calls is still one match. For processes whose output capplan does not print itself (a Ray
    worker's stdout and stderr become log files on its node).
    """

    def __init__(self, target: TextIO) -> None:
        super().__init__()
        self._target = target
        self._pending = ""
        self._lock = threading.Lock()

    @property
    def target(self) -> TextIO:
        """The stream written to."""
        return self._target

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        with self._lock:
            self._pending += text
            head, sep, tail = self._pending.rpartition("\n")
            if sep:
                self._target.write(redact_text(head + sep))
                self._pending = tail
        return len(text)

    def flush(self) -> None:
        with self._lock:
            if self._pending:
                self._target.write(redact_text(self._pending))
                self._pending = ""
        self._target.flush()

    @property
    def encoding(self) -> str:  # type: ignore[override]  # TextIOBase's is None; callers read it as text
        return getattr(self._target, "encoding", None) or "utf-8"

    def fileno(self) -> int:
        return self._target.fileno()

    def isatty(self) -> bool:
        return self._target.isatty()


def redact_standard_streams() -> None:
    """Route this process's ``sys.stdout`` and ``sys.stderr`` through the process redactor for good (idempotent).

    For a process capplan does not print from itself: a Ray worker, whose streams become log files.
    """
    register_secrets(())  # installs the log record scrubber even before any value is known
    if not isinstance(sys.stdout, RedactingStream):
        sys.stdout = RedactingStream(sys.stdout)
    if not isinstance(sys.stderr, RedactingStream):
        sys.stderr = RedactingStream(sys.stderr)


@contextmanager
def standard_streams_redacted() -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` through the process redactor while the block runs.

    A command's net for what it does not print itself (litellm and the SDKs print to stdout);
    what capplan prints is redacted where it is made. The streams are restored (and what was
    held back of an unfinished line written) however the block ends, ``SystemExit`` included.
    """
    saved = sys.stdout, sys.stderr
    out, err = RedactingStream(saved[0]), RedactingStream(saved[1])
    sys.stdout, sys.stderr = out, err
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
        for stream in (out, err):
            stream.flush()
