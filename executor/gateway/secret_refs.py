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

#: Names repeated in an error: the conventional upper-case shape of an environment variable.
_SHOWN_NAME = re.compile(r"[A-Z_][A-Z0-9_]{0,63}")

Lookup = Callable[[str], "str | None"]


class SecretReferenceError(ValueError):
    """A ``${secret:NAME}`` reference that is malformed or names nothing set."""


def expand_secret_refs(value: str, lookup: Lookup, *, where: str) -> str:
    """``value`` with each ``${secret:NAME}`` replaced by ``lookup(NAME)``.

    ``where`` names the value in errors (e.g. ``LLM_PROXY_HEADERS entry 2 value``); an error
    never quotes the value, resolved or not.
    """
    out: list[str] = []
    pos = 0
    for opening in _OPENING.finditer(value):
        start = opening.start()
        if start < pos:
            continue
        match = _REFERENCE.match(value, start)
        if match is None:
            # located by position, never quoted: what follows "${secret:" may be the secret itself
            raise SecretReferenceError(
                f"{where}: malformed secret reference at character {start + 1}; the form is ${{secret:NAME}} with NAME "
                f"made of letters, digits and '_' (not starting with a digit), closed by '}}'"
            )
        name = match.group(1)
        resolved = lookup(name)
        if resolved is None or resolved == "":
            # a name that is set is a variable; one that is not may be a key pasted into the
            # reference, so only an environment-variable-shaped (upper-case) name is repeated
            shown = f"${{secret:{name}}} does not resolve: {name}" if _SHOWN_NAME.fullmatch(name) else \
                f"the secret reference at character {start + 1} does not resolve: the variable it names"
            raise SecretReferenceError(f"{where}: {shown} is not set (in the environment or .env)")
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
