"""Turn a plan's provenance (layer, stable file name, key path) into a line a person can open.

Plans record where a value was set by its key path in the file, never by line: a line moves
when lines are added or removed above it, and a plan that recorded it would change whenever
an unrelated preset higher up in the same file was edited. A line is only useful in output
shown now, so it is looked up now, in the file as it is now.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from capplan.core.diagnostics import InputError
from capplan.compiler.bundled_index import lookup
from capplan.core.yaml_source import SourceFile, read_bundled, read_source
from capplan.presets import data_dir

if TYPE_CHECKING:  # annotations only: lint must not build the plan model
    from capplan.executor.plan import Provenance


@dataclass(frozen=True)
class Located:
    """A provenance entry as shown to a person: the file as they know it and the current line."""

    layer: str
    file: str | None
    line: int | None
    key: str | None

    def at(self) -> str:
        """``file:line``; ``file (key)`` when the key is no longer in the file; the file alone without a key."""
        if self.file is None:
            return ""
        if self.line is not None:
            return f"{self.file}:{self.line}"
        return f"{self.file} ({self.key})" if self.key else self.file


class LineIndex:
    """Files by stable name, parsed with positions, to resolve provenance key paths to lines."""

    def __init__(self, sources: Iterable[SourceFile] = (),
                 loader: Callable[[str], SourceFile | None] | None = None) -> None:
        self._files: dict[str, SourceFile | None] = {s.stable_name: s for s in sources}
        self._loader = loader

    def source(self, stable_name: str) -> SourceFile | None:
        """The parsed file a plan names ``stable_name``, or None when it cannot be found here."""
        if stable_name not in self._files:
            self._files[stable_name] = self._loader(stable_name) if self._loader else None
        return self._files[stable_name]

    def locate(self, prov: Provenance) -> Located:
        """``prov`` with the file named as the user gave it and the key's line in it now."""
        src = self.source(prov.file) if prov.file else None
        line = src.line_of(prov.key) if src is not None and prov.key else None
        shown = src.display if src is not None else prov.file
        return Located(prov.layer, shown, line, prov.key)


class LocatedOnDemand(Mapping[str, Located]):
    """A plan's provenance as :class:`Located` entries, each looked up when it is read.

    The compiler's checks read an entry only to place a diagnostic; locating all of a plan's
    provenance up front (a dozen key paths per model) was a tenth of compiling thousands of models
    (``benchmarks/compiler_speed.py``, memory row) for lookups almost never made.
    """

    def __init__(self, provenance: Mapping[str, Provenance], index: Callable[[], LineIndex]) -> None:
        self._provenance = provenance
        self._index = index
        self._built: LineIndex | None = None

    def __getitem__(self, path: str) -> Located:
        prov = self._provenance[path]
        if self._built is None:
            self._built = self._index()
        return self._built.locate(prov)

    def __contains__(self, path: object) -> bool:
        return path in self._provenance

    def __iter__(self) -> Iterator[str]:
        return iter(self._provenance)

    def __len__(self) -> int:
        return len(self._provenance)


def disk_index(root: Path) -> LineIndex:
    """Resolve stable names against the files on disk now: ``bundled:`` data and paths under ``root``.

    ``data:`` and ``external:`` names carry only a file name, so they stay unresolved (shown
    with their key path instead of a line).
    """
    def load(name: str) -> SourceFile | None:
        if name.startswith("bundled:"):
            path, display = data_dir() / name.removeprefix("bundled:"), name
        elif ":" in name.split("/", 1)[0]:
            return None
        else:
            path, display = root / name, name
        if not path.is_file() or path.suffix not in (".yaml", ".yml"):
            return None
        try:
            return read_bundled(path, display, lookup) if name.startswith("bundled:") else read_source(path, display)
        except InputError:
            return None

    return LineIndex(loader=load)
