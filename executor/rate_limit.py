"""Is this failure a 429? Three tiers of evidence, strongest first.

The executor re-raises provider errors wrapped (``raise ProviderCallError(...) from exc``), so
every question here walks the ``__cause__`` chain rather than looking at the outer exception.

1. **Type or status**: an ``openai.RateLimitError`` (litellm's subclasses it) or any link with
   ``status_code == 429``, where a litellm exception's status is the one off the wire
   (:func:`wire_status`), not the one litellm guessed from the message text.
2. **Terminal veto**: :class:`~capplan.executor.errors.AllApiKeysExhausted` (and a pinned gateway key's
   quota rejection, :class:`~capplan.executor.errors.GatewayRejectedError`) chains the provider's per-key
   429 as its cause, yet nothing clears it (the key chain only advances), so it stops the walk
   and is *not* a transient 429.
3. **Anchored text**, last resort, only when no link carried an HTTP status at all: a wrapper
   that stringified a provider error instead of chaining it. A non-429 status beats prose,
   because a 400's message can echo request content that talks about rate limits.
"""

from __future__ import annotations

import enum
import math
import re
import sys
from collections.abc import Iterable, Iterator

from capplan.core.reference_mode import speed_memo
from capplan.executor.errors import CredentialSpentError

Patterns = tuple[re.Pattern[str], ...]

#: Bounds the cause walk: a cycle (``a.__cause__ = b; b.__cause__ = a``) must not hang a retry.
_MAX_CHAIN = 32


def cause_chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` then each explicit ``__cause__``, cycle-safe and bounded.

    Only ``raise … from …`` links count: an implicit ``__context__`` is whatever happened to be
    in flight, not a statement about what this failure is.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(seen) < _MAX_CHAIN:
        seen.add(id(current))
        yield current
        current = current.__cause__


def compile_patterns(patterns: Iterable[str]) -> Patterns:
    """Compile a binding's ``rate_limit_patterns`` once, at client construction."""
    return _compiled(tuple(patterns))


@speed_memo(maxsize=256)
def _compiled(patterns: tuple[str, ...]) -> Patterns:
    # compiled patterns are immutable: every client of a binding shares one tuple of them
    return tuple(re.compile(p) for p in patterns)


def matches_rate_limit_text(text: str, patterns: Patterns) -> bool:
    """Whether ``text`` carries one of the anchored 429 shapes in ``patterns``.

    Prose alone is never proof of a rate limit; callers use this as tier 3 or as a diagnostic.
    """
    return any(p.search(text) for p in patterns)


class Evidence(enum.Enum):
    """What a walk of the cause chain found by type or status."""

    TYPED_429 = "typed_429"
    KEYS_EXHAUSTED = "keys_exhausted"
    OTHER_STATUS = "other_status"
    NONE = "none"


def wire_status(exc: BaseException) -> int | None:
    """The HTTP status the upstream actually sent for ``exc``, when it can be known.

    litellm maps provider errors partly by *message text*: a 400 whose body says "rate limit
    exceeded" comes back as a ``litellm.RateLimitError`` with ``status_code == 429``. The status
    off the wire survives on the provider error litellm was handling (its ``__context__``), so
    for a litellm exception the deepest status in that implicit chain wins. Any other exception's
    own ``status_code`` is taken as is.
    """
    status = _int_status(exc)
    if not type(exc).__module__.startswith("litellm"):
        return status
    seen = {id(exc)}
    link = exc.__context__
    while link is not None and id(link) not in seen and len(seen) < _MAX_CHAIN:
        seen.add(id(link))
        inner = _int_status(link)
        if inner is not None:
            status = inner
        link = link.__context__
    return status


def _int_status(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) and not isinstance(status, bool) else None


def _is_openai_rate_limit(exc: BaseException) -> bool:
    # openai is imported only by whoever sent the request; if it is not loaded, no link can be one
    openai = sys.modules.get("openai")
    cls = getattr(openai, "RateLimitError", None) if openai is not None else None
    return isinstance(cls, type) and isinstance(exc, cls)


def type_evidence(exc: BaseException) -> Evidence:
    """Tier 1 and 2: the first decisive link of the chain, by type or HTTP status."""
    saw_status = False
    for link in cause_chain(exc):
        if isinstance(link, CredentialSpentError):
            return Evidence.KEYS_EXHAUSTED
        status = wire_status(link)
        if status == 429 or (status is None and _is_openai_rate_limit(link)):
            return Evidence.TYPED_429
        if status is not None:
            saw_status = True
    return Evidence.OTHER_STATUS if saw_status else Evidence.NONE


def is_typed_rate_limit_exception(exc: BaseException) -> bool:
    """A 429 proven by type or status somewhere in the chain; message text is never read."""
    return type_evidence(exc) is Evidence.TYPED_429


def is_transient_rate_limit(exc: BaseException, patterns: Patterns) -> bool:
    """All three tiers: whether the probe controller should treat ``exc`` as a transient 429."""
    evidence = type_evidence(exc)
    if evidence is Evidence.TYPED_429:
        return True
    if evidence is not Evidence.NONE:
        return False
    return matches_rate_limit_text(str(exc), patterns)


def retry_after_s(exc: BaseException) -> float | None:
    """The ``Retry-After`` seconds (numeric form) the provider sent with ``exc``'s response, as sent.

    Read off the headers a link of the cause chain keeps (litellm's ``litellm_response_headers``, the
    direct transport's ``.response``); an HTTP-date form, a missing header, or a value that is not a
    finite number of seconds at least 0 is None. Capping it is the retry controller's business (the
    binding's ``retry_after_max_s``), so the record can show what the provider asked for.
    """
    for link in cause_chain(exc):
        value = None
        # litellm keeps the upstream's headers on its exception; its `.response` is often a stand-in without them
        for headers in (getattr(link, "litellm_response_headers", None),
                        getattr(getattr(link, "response", None), "headers", None)):
            getter = getattr(headers, "get", None)
            try:
                value = getter("retry-after") if getter is not None else None
            except Exception:  # noqa: BLE001 - headers that cannot be read carry no hint
                value = None
            if value is not None:
                break
        if value is None:
            continue
        try:
            seconds = float(str(value)[:64])
        except (TypeError, ValueError):
            return None
        if not math.isfinite(seconds) or seconds < 0:  # NaN, infinity or negative: no usable hint
            return None
        return seconds
    return None
