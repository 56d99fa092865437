"""Does a data set's ``requires_capplan`` specifier admit the installed capplan?

Every compile and every lint of a preset file asks, and the bundled presets ask it every time.
``packaging`` answers any PEP 440 specifier, but importing it compiles its version grammar (a
few milliseconds, several percent of ``capplan compile``). The specifiers data files write
(``">=0.1,<1"``) and capplan's own version (``0.1.0``) are plain releases, and for plain releases
PEP 440's comparisons are exactly the comparisons of the zero-padded release numbers: the
clauses that treat pre-, post-, dev- and local versions specially never apply. So those are
decided here, and everything else (``~=``, wildcards, pre-releases, ``===``, text packaging
would refuse) goes to ``packaging``, which also gives the refusal for malformed text.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Callable

from capplan.core.entry_points import distribution_folder

# longest first, so that ">=" is not read as ">" followed by "=..."
_OPERATORS: tuple[tuple[str, Callable[[tuple[int, ...], tuple[int, ...]], bool]], ...] = (
    (">=", operator.ge), ("<=", operator.le), ("==", operator.eq), ("!=", operator.ne),
    ("<", operator.lt), (">", operator.gt),
)


class BadSpecifier(ValueError):
    """The text is not a PEP 440 version specifier."""


def admits(spec_text: str, version: str) -> bool:
    """True when ``version`` satisfies ``spec_text`` (pre-releases admitted, as for capplan's own).

    Raises :class:`BadSpecifier` when ``spec_text`` is not a specifier.
    """
    decided = _admits_plain(spec_text, version)
    if decided is not None:
        return decided
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        spec = SpecifierSet(spec_text)
    except InvalidSpecifier:
        raise BadSpecifier(spec_text) from None
    return spec.contains(version, prereleases=True)


def _admits_plain(spec_text: str, version: str) -> bool | None:
    """The answer where the version and every clause are plain releases; None otherwise."""
    mine = _release(version.strip().removeprefix("v"))
    if mine is None:
        return None
    if spec_text.strip() == "":
        return True  # the empty specifier admits everything, as packaging's does
    verdict = True
    for clause in spec_text.split(","):
        clause = clause.strip()
        for op, compare in _OPERATORS:  # noqa: B007 - used after the break
            if clause.startswith(op):
                theirs = _release(clause[len(op):].strip())
                break
        else:
            return None
        if theirs is None:
            return None
        width = max(len(mine), len(theirs))
        # PEP 440 pads the shorter release with zeros: 1.0 == 1.0.0, 1 < 1.0.1
        verdict = verdict and compare(mine + (0,) * (width - len(mine)), theirs + (0,) * (width - len(theirs)))
    return verdict


def _release(text: str) -> tuple[int, ...] | None:
    """``(1, 2, 0)`` for ``"1.2.0"``; None for anything but dot-separated ASCII digits."""
    parts = text.split(".")
    if not all(part.isascii() and part.isdigit() for part in parts):
        return None
    return tuple(int(part) for part in parts)


def installed_version() -> str:
    """capplan's version, from its distribution's metadata.

    ``Distribution.version`` parses the whole METADATA file as an e-mail message, and importing
    the e-mail parser is most of its cost; the ``Version`` header is one line of the header block,
    so it is read directly, and the full parse is kept for a file where that line is not found.
    The metadata folder is the one importlib.metadata would read, found by the entry-point pass
    (:func:`capplan.core.entry_points.distribution_folder`), so that importlib.metadata itself is
    imported only where the pass cannot say or the line is not there.
    """
    folder = distribution_folder("capplan")
    if folder is not None:
        version = _version_header(_metadata_text(folder))
        if version is not None:
            return version
    from importlib.metadata import distribution

    dist = distribution("capplan")
    return _version_header(dist.read_text("METADATA") or dist.read_text("PKG-INFO") or "") or str(dist.version)


def _metadata_text(folder: str) -> str:
    # what Distribution.read_text("METADATA") or read_text("PKG-INFO") gives; a file importlib would
    # fail on (not UTF-8) reads as empty here, so that importlib.metadata is asked and fails as before
    for name in ("METADATA", "PKG-INFO"):
        try:
            with open(os.path.join(folder, name), encoding="utf-8") as handle:
                text = handle.read()
        except UnicodeDecodeError:
            return ""
        except OSError:
            continue
        if text:
            return text
    return ""


def _version_header(text: str) -> str | None:
    for line in text.splitlines():
        if not line.strip():
            break  # the header block ends at the first blank line
        name, sep, value = line.partition(":")
        if sep and name.strip().lower() == "version" and value.strip():
            return value.strip()
    return None
