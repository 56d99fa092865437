"""Canonical JSON bytes: the one serialisation plans are hashed and written in."""

from __future__ import annotations

import hashlib
import json
from json.encoder import encode_basestring
from typing import Any

from capplan.core.reference_mode import reference_mode


def canonical_bytes(data: Any) -> bytes:
    """Sorted keys, two-space indent, UTF-8, trailing newline; floats in Python's shortest repr.

    Exactly :func:`reference_canonical_bytes`. Seam *canonical writer*: with an indent, ``json``
    runs its pure-Python encoder (the C one only writes compact JSON), the larger part of sealing
    a plan; plain documents (what plans are: exact dicts with string keys, lists, strings, ints,
    finite floats, booleans, null) are written here the same way at about twice the speed
    (``benchmarks/compiler_speed.py``), and anything else goes to ``json`` itself. The reference
    mode (:mod:`capplan.core.reference_mode`) always uses ``json``.
    """
    if reference_mode():
        return reference_canonical_bytes(data)
    return fast_canonical_bytes(data)


def reference_canonical_bytes(data: Any) -> bytes:
    """The plain side: ``json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)`` + newline."""
    return (json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


def fast_canonical_bytes(data: Any) -> bytes:
    """The fast side: the writer below for plain documents, ``json`` for anything else."""
    out: list[str] = []
    try:
        _write(data, out, "\n")
    except (_NotPlain, RecursionError):  # json then writes it, or words the error, as it always did
        return reference_canonical_bytes(data)
    out.append("\n")
    return "".join(out).encode("utf-8")


class _NotPlain(Exception):
    """A value this writer leaves to ``json`` (subclasses, tuples, non-string keys, NaN, …)."""


_INF = float("inf")


def _write(value: Any, out: list[str], newline: str) -> None:
    # strings, booleans, null and ints, the most of a plan's values, are written in the loops
    # below without a call each: a third of sealing a plan was these calls
    kind = type(value)
    if kind is str:
        out.append(encode_basestring(value))
    elif kind is dict:
        if not value:
            out.append("{}")
            return
        inner = newline + "  "
        sep = "{" + inner
        keys = list(value)
        for k in keys:
            if type(k) is not str:
                raise _NotPlain
        keys.sort()
        append = out.append
        for key in keys:
            item = value[key]
            head = sep + encode_basestring(key) + ": "
            sep = "," + inner
            item_kind = type(item)
            if item_kind is str:
                append(head + encode_basestring(item))
            elif item is None:
                append(head + "null")
            elif item is True:
                append(head + "true")
            elif item is False:
                append(head + "false")
            elif item_kind is int:
                append(head + int.__repr__(item))
            else:
                append(head)
                _write(item, out, inner)
        append(newline + "}")
    elif kind is list:
        if not value:
            out.append("[]")
            return
        inner = newline + "  "
        sep = "[" + inner
        append = out.append
        for item in value:
            item_kind = type(item)
            if item_kind is str:
                append(sep + encode_basestring(item))
            elif item is None:
                append(sep + "null")
            elif item is True:
                append(sep + "true")
            elif item is False:
                append(sep + "false")
            elif item_kind is int:
                append(sep + int.__repr__(item))
            else:
                append(sep)
                _write(item, out, inner)
            sep = "," + inner
        append(newline + "]")
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif kind is int:
        out.append(int.__repr__(value))
    elif kind is float and value == value and -_INF < value < _INF:
        out.append(float.__repr__(value))
    else:
        raise _NotPlain


def sha256_hex(data: bytes) -> str:
    """Hex sha256 of ``data``."""
    return hashlib.sha256(data).hexdigest()
