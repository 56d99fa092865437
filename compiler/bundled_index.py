"""The bundled YAML files, parsed ahead of time and shipped beside them (``presets/bundled_index.json``).

Every ``capplan lint`` and ``capplan compile`` reads the bundled presets, providers and
catalogue. Parsing them needs PyYAML (whose import compiles a large Unicode regex) and a
libyaml pass per file; reading their parse from a JSON file needs neither. The index is keyed
by the sha256 of each file's bytes and is only ever a shortcut:

- a file whose bytes have no entry (edited data, another data set) is parsed as before;
- an index that is missing, unreadable, corrupt (its first line is the sha256 of the rest) or of
  another format is ignored;
- it is never written at run time: ``python -m capplan.compiler.bundled_index --update`` writes it from
  the bundled files (a test fails, naming that command, when it is out of date), so installed
  copies of capplan never write into their own folder or the user's.

Why a file shipped with the package and not a cache in the user's folder: a CI runner starts
cold every time, and a read-only install must not need a writable folder to start fast.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from capplan.core.yaml_source import Parsed, parse_with_libyaml
from capplan.presets import data_dir

FORMAT = 1
INDEX_NAME = "bundled_index.json"
UPDATE_COMMAND = "python -m capplan.compiler.bundled_index --update"


def index_path() -> Path:
    """Where the index ships: beside the bundled files."""
    return data_dir() / INDEX_NAME


def lookup(sha256: str, index: Path | None = None) -> Parsed | None:
    """Data and positions of the bundled file whose bytes hash to ``sha256``; None when unknown."""
    try:
        raw = (index or index_path()).read_bytes()
    except OSError:
        return None
    checksum, _, body = raw.partition(b"\n")
    if hashlib.sha256(body).hexdigest().encode("ascii") != checksum:
        return None
    try:
        document = json.loads(body)
        if document.get("format") != FORMAT:
            return None
        entry = document["files"].get(sha256)
        if entry is None:
            return None
        data = entry["data"]
        positions = {tuple(loc): (line, col) for loc, line, col in entry["positions"]}
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    if not isinstance(data, dict):
        return None
    return data, positions


def _plain(value: Any) -> bool:
    """Whether JSON carries ``value`` back exactly (types included: no int keys, no dates, no NaN)."""
    kind = type(value)
    if kind is dict:
        return all(type(k) is str and _plain(v) for k, v in value.items())
    if kind is list:
        return all(_plain(v) for v in value)
    if kind is float:
        return value == value and value not in (float("inf"), float("-inf"))
    return kind in (str, int, bool) or value is None


def build(folder: Path) -> bytes:
    """The index of every ``*.yaml`` in ``folder`` whose libyaml parse JSON can carry exactly."""
    files: dict[str, Any] = {}
    for path in sorted(folder.glob("*.yaml")):
        raw = path.read_bytes()
        parsed = parse_with_libyaml(raw)
        if parsed is None:
            continue
        data, positions = parsed
        if not _plain(data) or not all(type(p) in (str, int) for loc in positions for p in loc):
            continue
        files[hashlib.sha256(raw).hexdigest()] = {
            "file": path.name,
            "data": data,
            "positions": [[list(loc), line, col] for loc, (line, col) in positions.items()],
        }
    # key order is data (presets are matched first to last), so keys keep the files' order
    body = json.dumps({"format": FORMAT, "files": files}, ensure_ascii=False, allow_nan=False,
                      separators=(",", ":")).encode("utf-8") + b"\n"
    return hashlib.sha256(body).hexdigest().encode("ascii") + b"\n" + body


def main(argv: list[str] | None = None) -> int:
    """``--update`` rewrites the index from the bundled files; ``--check`` exits 1 when it is stale."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m capplan.compiler.bundled_index", description=main.__doc__)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--update", action="store_true", help="rewrite presets/bundled_index.json")
    mode.add_argument("--check", action="store_true", help="exit 1 when it does not match the bundled files")
    args = parser.parse_args(argv)
    wanted = build(data_dir())
    target = index_path()
    current = target.read_bytes() if target.exists() else None
    if args.check:
        if current != wanted:
            print(f"{target} is out of date; run: {UPDATE_COMMAND}", file=sys.stderr)
            return 1
        print(f"{target} is up to date")
        return 0
    if current != wanted:
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_bytes(wanted)
        tmp.replace(target)  # atomic: a reader sees the old index or the new one
    print(f"{target}: {'updated' if current != wanted else 'already up to date'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
