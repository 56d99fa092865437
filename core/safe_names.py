"""One rule for every name that becomes part of a path: a plan's model key, a task id, a pack.

Such names arrive in files a pull request can change (a resealed plan, a task file, a folder
name), and each ends up as a folder or file name under an output folder. A safe name is a
short slug: it starts with a letter or digit, holds only letters, digits and ``. _ - + = @ ,``,
never contains ``..``, and is at most :data:`MAX_NAME_CHARS` long. It therefore has no path
separator, no drive letter, no control character or ANSI escape, no whitespace and nothing a
Markdown table or a shell would read as syntax. The rule is checked where a name is read (plan
load, task file, run config) and again where it is joined to a folder, so a name that slipped
past one reader still cannot leave the folder.
"""

from __future__ import annotations

import re

MAX_NAME_CHARS = 128

_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+=@,\-]*")
_ALLOWED_TEXT = "letters, digits and . _ - + = @ , (starting with a letter or digit)"


class UnsafeName(ValueError):
    """A name that would not stay one path segment inside its folder."""


def name_problem(name: object) -> str | None:
    """What is wrong with ``name`` as a path segment, or None when it is safe.

    The description never quotes the name itself: it may be huge or carry escapes.
    """
    if not isinstance(name, str):
        return f"must be a string, not {type(name).__name__}"
    if not name:
        return "must not be empty"
    if len(name) > MAX_NAME_CHARS:
        return f"is {len(name)} characters long; at most {MAX_NAME_CHARS} are allowed"
    if ".." in name:
        return "must not contain '..'"
    if _SAFE.fullmatch(name) is None:
        bad = next((c for c in name if not (c.isascii() and (c.isalnum() or c in "._+=@,-"))), name[0])
        shown = repr(bad) if bad.isprintable() and bad.isascii() else f"U+{ord(bad):04X}"
        return f"contains {shown}; only {_ALLOWED_TEXT} are allowed"
    return None


def check_name(name: object, what: str) -> str:
    """``name`` itself when safe; :class:`UnsafeName` saying which ``what`` is wrong and how."""
    problem = name_problem(name)
    if problem is not None:
        raise UnsafeName(f"{what} {problem}")
    assert isinstance(name, str)
    return name
