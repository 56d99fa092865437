"""Bounds and constrained types for values that reach the wire, a timer or a loop counter.

A plan may come from a pull request, resealed (its fingerprint recomputed) by whoever edited it,
and the compiler's inputs may too. A value that is well-typed but absurd (a turn budget of
10**12, an endpoint of ``file:///etc/passwd``, a CRLF inside an attribution header, a regex
that does not compile) fails far from its cause: a run that never ends, a call that fails
after a minute as a "connection error", a traceback. Each rule here is stated once, so the
plan model and the compiler's input models refuse the same values with the same words.

Problem descriptions never quote the value: an endpoint may carry a password, and a header
value may be a pasted token.
"""

# no `from __future__ import annotations`: pydantic reads the Annotated types below as objects

import math
import re
from collections.abc import Callable, Mapping
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import AfterValidator, Field, StringConstraints

#: Most agent turns a turn budget may allow (the built-in default is 50).
MAX_TURNS = 10_000
#: Most tokens any token count may name: context windows, watermarks, output caps, reasoning
#: budgets. The largest context windows are ~10**7 tokens; 10**8 leaves room and stays sane.
MAX_TOKENS = 100_000_000
#: Most characters a per-model character cap (tool output in the prompt) may name.
MAX_CHARS = 100_000_000
#: Most resamples a retry count may ask for.
MAX_RETRIES = 100
#: Longest duration in seconds any timeout, budget or interval may name (one day).
MAX_SECONDS = 86_400.0
#: Highest price, in USD per million tokens (today's dearest models charge under 10**3).
MAX_PRICE_PER_MTOK = 1_000_000.0
#: Largest magnitude of a seed (providers take a signed 64-bit integer).
MAX_SEED = 2**63 - 1
#: Highest sampling temperature any provider accepts.
MAX_TEMPERATURE = 2.0

#: Longest URL accepted in an endpoint field.
MAX_URL_CHARS = 2048
#: Longest value accepted for a string that becomes an HTTP header value.
MAX_HEADER_VALUE_CHARS = 2048

_URL_SCHEMES = ("http", "https")


def http_url_problem(value: str) -> str | None:
    """What keeps ``value`` from being an http(s) base URL with a host, or None when it is one.

    The same rule as the compiler's check of an input file's endpoint, so a plan the compiler
    wrote always loads, and a plan that names ``file:///etc/passwd`` never does.
    """
    if len(value) > MAX_URL_CHARS:
        return f"is {len(value)} characters long; at most {MAX_URL_CHARS} are allowed"
    if any(c.isspace() or ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        return "must not contain whitespace or control characters"
    try:
        parts = urlsplit(value)
        port = parts.port  # raises ValueError for a port out of range or not a number
        host = parts.hostname
    except ValueError:
        # urllib's own wording is not quoted: some of its messages repeat the URL
        return "is not a valid URL"
    if parts.scheme.lower() not in _URL_SCHEMES:
        return "must be an http:// or https:// URL"
    if not host:
        return "must name a host, e.g. https://llm.example.com/v1"
    if parts.username is not None or parts.password is not None:
        # a plan holds no secret, and URL userinfo is one: every diff would print it
        return "must not carry credentials (user:password@); put the key in the binding's key variable"
    if port == 0:
        return "has port 0"
    return None


def header_value_problem(value: str) -> str | None:
    """What keeps ``value`` from being sent as an HTTP header value, or None when it can be.

    A CR or LF would split the header (httpx refuses it at call time, which the retry
    machinery reads as a connection error, a minute later); any other control character is
    refused by the HTTP client too. The compiler's input models apply the same rule.
    """
    if not value:
        return "must not be empty"
    if len(value) > MAX_HEADER_VALUE_CHARS:
        return f"is {len(value)} characters long; at most {MAX_HEADER_VALUE_CHARS} are allowed"
    if "\r" in value or "\n" in value:
        return "contains a line break (CR or LF); an HTTP header value is one line"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        return "contains a control character, which an HTTP header value cannot carry"
    return None


def regex_problem(pattern: str) -> str | None:
    """What keeps ``pattern`` from compiling as a Python regular expression, or None."""
    try:
        re.compile(pattern)
    except re.error as exc:
        # re.error's message names the problem and its position, not the pattern
        where = f" at position {exc.pos}" if exc.pos is not None else ""
        return f"is not a regular expression ({exc.msg}{where})"
    except (RecursionError, OverflowError):
        return "is not a regular expression (nested or repeated too deeply)"
    return None


def non_finite_path(value: Any) -> tuple[str | int, ...] | None:
    """The path (keys and indexes) to the first NaN or infinity inside JSON-like ``value``, or None.

    A parsed plan's nesting is bounded by the JSON reader (``MAX_NESTING``), so this recursion is too.
    """
    if isinstance(value, float):
        return None if math.isfinite(value) else ()
    items: Any = ()
    if isinstance(value, Mapping):
        items = value.items()
    elif isinstance(value, (list, tuple)):
        items = enumerate(value)
    for key, item in items:
        found = non_finite_path(item)
        if found is not None:
            return (key, *found)
    return None


def _checked(problem: Callable[[str], str | None]) -> Callable[[str], str]:
    def check(value: str) -> str:
        found = problem(value)
        if found is not None:
            raise ValueError(found)
        return value

    return check


#: An http(s) base URL with a host, no userinfo, no whitespace or control characters.
HttpUrlText = Annotated[str, Field(min_length=1, max_length=MAX_URL_CHARS), AfterValidator(_checked(http_url_problem))]
#: A string sent as an HTTP header value: one line, no control characters.
HeaderValue = Annotated[
    str, Field(min_length=1, max_length=MAX_HEADER_VALUE_CHARS), AfterValidator(_checked(header_value_problem))
]
#: An OpenRouter upstream provider's name (sent in the request body's provider.order).
UpstreamName = Annotated[str, StringConstraints(min_length=1, max_length=128, pattern=r"^[^\x00-\x1f\x7f]+$")]
#: A price in USD per million tokens.
Price = Annotated[float, Field(ge=0, le=MAX_PRICE_PER_MTOK, allow_inf_nan=False)]
#: A duration in seconds: more than zero, at most a day.
Seconds = Annotated[float, Field(gt=0, le=MAX_SECONDS, allow_inf_nan=False)]
#: A token count: at least one, at most :data:`MAX_TOKENS`.
TokenCount = Annotated[int, Field(gt=0, le=MAX_TOKENS)]
#: A turn budget: at least one, at most :data:`MAX_TURNS`.
TurnCount = Annotated[int, Field(gt=0, le=MAX_TURNS)]
#: A resample count: zero to :data:`MAX_RETRIES`.
RetryCount = Annotated[int, Field(ge=0, le=MAX_RETRIES)]
#: A character cap: at least one, at most :data:`MAX_CHARS`.
CharCount = Annotated[int, Field(gt=0, le=MAX_CHARS)]
#: A seed: a signed 64-bit integer.
Seed = Annotated[int, Field(ge=-MAX_SEED - 1, le=MAX_SEED)]
#: A sampling temperature.
Temperature = Annotated[float, Field(ge=0, le=MAX_TEMPERATURE, allow_inf_nan=False)]
#: A nucleus sampling mass.
TopP = Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)]
