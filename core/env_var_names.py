"""Names written where an environment variable's name belongs, and the pasted keys they may be.

Input files, plans and settings name the variables that hold keys (``api_key_env:
OPENROUTER_API_KEY``), never the keys. A value with the shape of a key in such a place is
refused with :data:`CREDENTIAL_VALUE_MESSAGE`, which never quotes it: the plan model, the
compiler's checks and the located pydantic errors all test and word it the same way, so the
rule lives here, below all of them.
"""

from __future__ import annotations

import math
import re
from collections import Counter

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
#: prefixes of provider keys and tokens: a value starting so is a pasted secret, not a variable name
_KEY_PREFIXES = ("sk-", "sk_", "sk-ant-", "sk-or-", "xai-", "gsk_", "AIza", "ghp_", "github_pat_", "AKIA", "hf_")
CREDENTIAL_VALUE_MESSAGE = "looks like a credential value, not the name of an environment variable"

#: a name this long and this varied is a random token, not a variable someone named
_ENTROPY_MIN_CHARS = 20
_ENTROPY_BITS_PER_CHAR = 4.0


def looks_like_key(value: str) -> bool:
    """Whether ``value`` has the shape of a provider key or token: a known prefix, or long lower case and digits."""
    lowered_digits = sum(c.isdigit() for c in value) >= 4 and any(c.islower() for c in value)
    return value.startswith(_KEY_PREFIXES) or (len(value) >= 32 and lowered_digits)


def env_var_name(value: str | None) -> str | None:
    """An ``*_env`` field names an environment variable; a pasted key is refused without echoing it."""
    if value is None:
        return None
    if looks_like_key(value):
        raise ValueError(CREDENTIAL_VALUE_MESSAGE)
    if not _ENV_NAME.match(value):
        raise ValueError("not an environment variable name (letters, digits and '_', not starting with a digit)")
    return value


def looks_like_credential(name: str) -> bool:
    """True when ``name``, written where a variable name belongs, is more likely a pasted key.

    A known key prefix (``sk-``, ``ghp_``, …), the long mixed-case-and-digits shape, or a long
    run of high-entropy characters (a random token, whatever its case) all count.
    """
    if looks_like_key(name):
        return True
    if len(name) < _ENTROPY_MIN_CHARS:
        return False
    counts = Counter(name)
    bits = -sum(n / len(name) * math.log2(n / len(name)) for n in counts.values())
    return bits >= _ENTROPY_BITS_PER_CHAR and any(c.isdigit() for c in name)
