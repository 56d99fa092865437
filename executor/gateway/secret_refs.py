"""``${secret:NAME}`` references inside a configuration value.

The form is typed, not shell-style: plenty of credentials contain ``$`` (argon2, bcrypt,
generated passwords), so a lone ``$`` is never special and ``Pa$$w0rd`` passes untouched.
An unresolved name and a malformed reference are hard errors: an empty substitution bills a
call to nobody, and a literal ``${secret:...}`` on the wire reads as network trouble at the
gateway. Expansion is single-level: a resolved value is never rescanned.
"""

from __future__ import annotations

import re
from collections.abc import Callable

#: A well-formed reference; NAME is an environment-variable-shaped identifier.
_REFERENCE = re.compile(r"\$\{secret:([A-Za-z_][A-Za-z0-9_]*)\}")
#: Anything that starts like a reference; whatever of these is not well formed is refused.
_OPENING = re.compile(r"\$\{secret:")

Lookup = Callable[[str], "str | None"]


class SecretReferenceError(ValueError):
    """A ``${secret:NAME}`` reference that is malformed or names nothing set."""


def expand_secret_refs(value: str, lookup: Lookup, *, where: str) -> str:
    """``value`` with each ``${secret:NAME}`` replaced by ``lookup(NAME)``.

    ``where`` names the value in errors (e.g. ``LLM_PROXY_HEADERS value for 'X-Order-Id'``);
    an error never quotes a resolved value.
    """
    out: list[str] = []
    pos = 0
    for opening in _OPENING.finditer(value):
        start = opening.start()
        if start < pos:
            continue
        match = _REFERENCE.match(value, start)
        if match is None:
            fragment = value[start : start + 40]
            raise SecretReferenceError(
                f"{where}: malformed secret reference {fragment!r}; the form is ${{secret:NAME}} with NAME "
                f"made of letters, digits and '_' (not starting with a digit), closed by '}}'"
            )
        name = match.group(1)
        resolved = lookup(name)
        if resolved is None or resolved == "":
            raise SecretReferenceError(
                f"{where}: ${{secret:{name}}} does not resolve: {name} is not set (in the environment or .env)"
            )
        if _OPENING.search(resolved):
            raise SecretReferenceError(
                f"{where}: the value of {name} itself contains a ${{secret:...}} reference; "
                f"expansion is single-level, so it is refused rather than sent"
            )
        out.append(value[pos:start])
        out.append(resolved)
        pos = match.end()
    out.append(value[pos:])
    return "".join(out)
