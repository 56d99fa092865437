"""Hard limits on every file capplan reads, because CI runs it on files from pull requests.

Each limit is checked while the input is read (no extra pass over parsed data), and a breach
is an :class:`InputLimitError` naming the limit; callers turn it into a located error. The
README's "Limits" section lists these numbers.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

#: Largest preset, overlay, providers, pricing or run-config file (bytes).
MAX_CONFIG_BYTES = 1024 * 1024
#: Largest plan file (bytes); a compiled plan is a few KB.
MAX_PLAN_BYTES = 4 * 1024 * 1024
#: Largest request file (bytes); base64 images make requests the biggest input.
MAX_REQUEST_BYTES = 32 * 1024 * 1024
#: Deepest nesting of mappings and lists in any YAML or JSON input.
MAX_NESTING = 64
#: Most alias uses (``*name``) in one YAML document.
MAX_ALIASES = 1000
#: Most nodes (a string counts one per 64 characters) that alias uses may add to a document.
MAX_ALIAS_EXPANSION = 100_000
#: Most schema nodes one tool's parameters may grow to while ``$ref``s are inlined.
MAX_SCHEMA_NODES = 50_000
#: Deepest chain of ``$ref``s inlined inside one another.
MAX_REF_DEPTH = 64
#: Longest number literal in a JSON input (characters): past Python's own int-string limit a
#: parse fails deep inside the decoder, and no field capplan reads needs more than a few dozen.
MAX_NUMBER_CHARS = 100


class InputLimitError(ValueError):
    """An input breaks a hard limit; ``code`` names which, ``line``/``col`` say where when known."""

    def __init__(self, code: str, message: str, line: int = 1, col: int = 1) -> None:
        self.code, self.line, self.col = code, line, col
        super().__init__(message)


#: bytes asked for per read after the first (an os.read allocates what it is asked for)
_READ_CHUNK = 1 << 16


def read_limited(path: Path, limit: int) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes.

    Devices and FIFOs are refused before they are opened (``/dev/zero`` never ends, a FIFO
    blocks the open). ``OSError`` (missing file, permissions) propagates to the caller.
    """
    name = os.fspath(path)
    st = os.stat(name)
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(21, "Is a directory", name)
    if not stat.S_ISREG(st.st_mode):
        raise InputLimitError("special-file", "not a regular file (a device, FIFO or socket); capplan reads only files")
    if st.st_size > limit:
        raise InputLimitError("file-too-large", f"file is {st.st_size} bytes; the limit is {limit}")
    # plain descriptor reads: a buffered file object costs more than reading a plan file does
    fd = os.open(name, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        # sized from stat (a read of limit + 1 would allocate the whole limit every time), then
        # topped up to the limit in case the file grew since stat
        data = os.read(fd, st.st_size + 1)
        while len(data) <= limit:
            # until end of file: a short read, or a file that grew since stat, reads on in chunks
            more = os.read(fd, min(limit + 1 - len(data), _READ_CHUNK))
            if not more:
                break
            data += more
    finally:
        os.close(fd)
    if len(data) > limit:
        raise InputLimitError("file-too-large", f"file is over the limit of {limit} bytes")
    return data


# Quoted scalars and comments, whose brackets are text. YAML quotes only open a scalar (after
# whitespace, `[`, `{` or `,`), so the apostrophe in `it's` is not taken for one.
_TEXT = re.compile(
    r"""(?<![^\s\[{,:])(?:"[^"\\]*(?:\\.[^"\\]*)*"|'[^']*(?:''[^']*)*')|(?<!\S)\#[^\n]*""",
    re.DOTALL,
)
_OPEN_CLOSE = re.compile(r"[\[\]{}]")


def check_flow_nesting(text: str, limit: int = MAX_NESTING) -> None:
    """Refuse JSON / YAML flow collections nested deeper than ``limit``, before a parser recurses.

    Parsers recurse once per level (ruamel takes seconds at a few thousand levels), so the
    depth is measured on the text first: one regex pass removes quoted text and comments, a
    second finds the brackets. Block-style YAML nesting is bounded where the tree is built.
    """
    depth = 0
    stripped = _TEXT.sub(_blank, text)
    for match in _OPEN_CLOSE.finditer(stripped):
        if match.group() in "[{":
            depth += 1
            if depth > limit:
                pos = match.start()
                line = stripped.count("\n", 0, pos) + 1
                col = pos - (stripped.rfind("\n", 0, pos) + 1) + 1
                raise InputLimitError("nesting-too-deep", f"nested more than {limit} levels deep", line, col)
        elif depth:
            depth -= 1


_NOT_NEWLINE = re.compile(r"[^\n]")


def _blank(match: re.Match[str]) -> str:
    # blank the text but keep its newlines, so the positions after it stay right
    return _NOT_NEWLINE.sub(" ", match.group())
