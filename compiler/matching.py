"""Preset matching: the first preset whose globs match the model wins.

The one rule (also in the README): ``match:`` globs are fnmatch patterns compared
case-insensitively with the model's ``name``; ``match_provider:`` globs with its ``provider``;
a ``litellm_models`` key is compared exactly with the model id ``<provider>/<name>`` (or the
wire model after the binding's rewrite). :mod:`capplan.compiler.usage_checks` warns about entries that
this rule makes unreachable.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

from capplan.core.diagnostics import Diagnostic
from capplan.compiler.inputs.preset_file import PresetEntry, PresetFile
from capplan.compiler.loading import Loaded
from capplan.core.yaml_source import SourceFile

if TYPE_CHECKING:  # the overlay's models are imported where an overlay is read
    from capplan.compiler.inputs.overlay_file import OverlayFile


@dataclass(frozen=True)
class Candidate:
    """A preset in matching order, and the file it came from."""

    name: str
    entry: PresetEntry
    source: SourceFile
    origin: str  # "bundled" or "overlay"


def preset_matches(entry: PresetEntry, name: str, provider: str) -> bool:
    """Whether ``entry`` selects the model ``provider``/``name``."""
    lowered = name.lower()
    if any(glob_match(lowered, glob.lower()) for glob in entry.match):
        return True
    return any(glob_match(provider.lower(), glob.lower()) for glob in entry.match_provider or ())


def glob_match(text: str, glob: str) -> bool:
    """``fnmatchcase(text, glob)``; a glob whose only wildcard is ``*`` is matched without a regex.

    fnmatch compiles every new pattern into a regular expression, and a catalogue's globs are
    new to every process: compiling them was a measurable share of ``capplan compile``. Nearly
    every preset glob uses ``*`` alone, and for those a left-to-right search for the literal
    pieces between the stars gives exactly fnmatch's answer (a star matches any run of
    characters, ``/`` included, and taking the earliest occurrence of each piece never loses
    a match).
    """
    if _has_class(glob):
        return fnmatchcase(text, glob)
    return star_match(text, glob)


def star_match(text: str, glob: str) -> bool:
    """``fnmatchcase`` for a glob without ``?`` or ``[`` (its only wildcard is ``*``)."""
    pieces = glob.split("*")
    if len(pieces) == 1:
        return text == glob
    head, tail = pieces[0], pieces[-1]
    end = len(text) - len(tail)
    if end < len(head) or not text.startswith(head) or not text.endswith(tail):
        return False
    at = len(head)
    for piece in pieces[1:-1]:
        found = text.find(piece, at, end)
        if found < 0:
            return False
        at = found + len(piece)
    return True


def first_match(candidates: list[Candidate], name: str, provider: str) -> Candidate | None:
    """The first candidate that matches, or None (the model gets only the default layer)."""
    return next((c for c in candidates if preset_matches(c.entry, name, provider)), None)


def _has_class(glob: str) -> bool:
    return "?" in glob or "[" in glob


def literal_runs(glob: str) -> tuple[str, str, list[str]]:
    """``(head, tail, runs)``: the literal text before the first wildcard, after the last one, and every run.

    Wildcards are ``*``, ``?`` and a ``[...]`` class, read exactly as :func:`fnmatch.translate` reads
    them (an unclosed ``[`` is a literal; ``]`` right after ``[`` or ``[!`` belongs to the class). Any
    text the glob matches starts with ``head``, ends with ``tail`` and contains every run. For a glob
    with no wildcard, ``head`` and ``tail`` are the glob and ``runs`` is ``[glob]``.
    """
    runs: list[str] = []
    current: list[str] = []
    wild = False
    head: str | None = None
    i, n = 0, len(glob)
    while i < n:
        c = glob[i]
        i += 1
        if c in "*?":
            is_wild = True
        elif c == "[":
            j = i
            if j < n and glob[j] == "!":
                j += 1
            if j < n and glob[j] == "]":
                j += 1
            while j < n and glob[j] != "]":
                j += 1
            is_wild = j < n
            if is_wild:
                i = j + 1
        else:
            is_wild = False
        if not is_wild:
            current.append(c)
            continue
        if head is None:
            head = "".join(current)
        wild = True
        if current:
            runs.append("".join(current))
        current = []
    if current:
        runs.append("".join(current))
    if not wild:
        return glob, glob, [glob] if glob else []
    return head or "", "".join(current), runs


class GlobIndex:
    """Globs by owner position, answering "the first owner with a glob that matches this text".

    A scan tries every glob of every owner; the index looks only where a match is possible, so a
    lookup costs about the text's length times the number of distinct key lengths, whatever the
    number of globs or their shape. Every glob is filed under one literal key that any text it
    matches must have (see :func:`literal_runs`): a glob without wildcards under its whole text (a
    dict key); else under the longest of its literal prefix, its literal suffix and its longest
    literal run — as a prefix, suffix or infix key. A lookup tries the buckets of the text's own
    prefixes, suffixes and substrings of the lengths some key has; only globs with no literal at all
    (``*``, ``?*``) are tried for every text, and a glob already indexed for an earlier owner is
    not indexed again (it could never be the first match), so that list stays as short as the
    distinct literal-free globs. Buckets are in position order, so a bucket is left at its first
    match or at the best position found so far. Everything is compared lower-cased, as matching
    does; a glob is tested with :func:`star_match` when ``*`` is its only wildcard, else fnmatch.
    """

    def __init__(self) -> None:
        self._literal: dict[str, int] = {}
        self._seen: set[str] = set()
        # kind -> key -> [(position, glob, stars_only)] in position order; kind -> the key lengths in use
        self._buckets: dict[str, dict[str, list[tuple[int, str, bool]]]] = {"prefix": {}, "suffix": {}, "infix": {}}
        self._lengths: dict[str, set[int]] = {"prefix": set(), "suffix": set(), "infix": set()}
        self._sorted: dict[str, list[int]] = {}
        self._anywhere: list[tuple[int, str, bool]] = []

    def add(self, position: int, glob: str, *, stars_only: bool = False) -> None:
        """Index ``glob`` for the owner at ``position`` (added in increasing order).

        ``stars_only`` leaves out globs with ``?`` or ``[`` (coverage is never claimed for them).
        """
        lowered = glob.lower()
        classy = _has_class(lowered)
        if (classy and stars_only) or lowered in self._seen:
            return
        self._seen.add(lowered)
        if not classy and "*" not in lowered:
            self._literal.setdefault(lowered, position)
            return
        head, tail, runs = literal_runs(lowered)
        longest = max(runs, key=len, default="")
        # the longest key is the most selective; on a tie, the kind with the fewest lookups
        kind, key = max((("prefix", head), ("suffix", tail), ("infix", longest)),
                        key=lambda pair: (len(pair[1]), pair[0] == "prefix", pair[0] == "suffix"))
        entry = (position, lowered, not classy)
        if not key:
            self._anywhere.append(entry)
            return
        self._buckets[kind].setdefault(key, []).append(entry)
        if len(key) not in self._lengths[kind]:
            self._lengths[kind].add(len(key))
            self._sorted.pop(kind, None)

    def _lengths_of(self, kind: str) -> list[int]:
        found = self._sorted.get(kind)
        if found is None:
            found = self._sorted[kind] = sorted(self._lengths[kind])
        return found

    def first(self, text: str, before: int | None = None) -> int | None:
        """The lowest position whose glob matches ``text`` (only positions below ``before``)."""
        lowered = text.lower()
        size = len(lowered)
        best = self._literal.get(lowered)
        if best is not None and before is not None and best >= before:
            best = None
        # what a candidate must beat: the best position so far, else the limit (None: anything)
        best_or_limit: int | None = best if best is not None else before

        def scan(entries: list[tuple[int, str, bool]]) -> None:
            nonlocal best, best_or_limit
            for position, glob, stars in entries:
                if best_or_limit is not None and position >= best_or_limit:
                    return  # entries are in position order
                if star_match(lowered, glob) if stars else fnmatchcase(lowered, glob):
                    best = best_or_limit = position
                    return

        prefix, suffix, infix = self._buckets["prefix"], self._buckets["suffix"], self._buckets["infix"]
        for length in self._lengths_of("prefix"):
            if length > size:
                break
            hit = prefix.get(lowered[:length])
            if hit:
                scan(hit)
        for length in self._lengths_of("suffix"):
            if length > size:
                break
            hit = suffix.get(lowered[size - length:])
            if hit:
                scan(hit)
        for length in self._lengths_of("infix"):
            if length > size:
                break
            tried: set[str] = set()
            for at in range(size - length + 1):
                piece = lowered[at:at + length]
                if piece in tried:
                    continue
                tried.add(piece)
                hit = infix.get(piece)
                if hit:
                    scan(hit)
        scan(self._anywhere)
        return best


class Matcher:
    """``first_match`` over a fixed candidate list, indexed once: linear in models, not models x presets."""

    def __init__(self, candidates: list[Candidate]) -> None:
        self.candidates = candidates
        self._names = GlobIndex()
        self._providers = GlobIndex()
        for position, cand in enumerate(candidates):
            for glob in cand.entry.match:
                self._names.add(position, glob)
            for glob in cand.entry.match_provider or ():
                self._providers.add(position, glob)

    def first(self, name: str, provider: str) -> Candidate | None:
        """What ``first_match(candidates, name, provider)`` returns."""
        by_name = self._names.first(name)
        by_provider = self._providers.first(provider, by_name)
        found = by_provider if by_provider is not None else by_name
        return self.candidates[found] if found is not None else None


def glob_covers(earlier: str, later: str) -> bool:
    """True when every name ``later`` matches is also matched by ``earlier``.

    Decided only for globs whose sole wildcard is ``*``: then ``earlier`` matching the literal
    text of ``later`` proves coverage (each of its stars can absorb what a star of ``later``
    expands to). Anything with ``?`` or ``[`` is never claimed to be covered.
    """
    if _has_class(earlier) or _has_class(later):
        return False
    return star_match(later.lower(), earlier.lower())


def shadowed_globs(candidates: list[Candidate]) -> list[tuple[Candidate, str, Candidate]]:
    """(preset, glob, earlier preset) for presets none of whose globs can ever win.

    A preset that also matches by provider is never reported: its provider route still works.
    Each glob is looked up among the earlier presets' globs through an index (``glob_covers``
    is a match of the later glob's text against the earlier glob), so the check grows with the
    number of globs, not with their pairs.
    """
    found = []
    earlier = GlobIndex()
    for i, cand in enumerate(candidates):
        if not cand.entry.match_provider:
            blockers = []
            for glob in cand.entry.match:
                blocker = None if _has_class(glob) else earlier.first(glob)
                if blocker is None:
                    break
                blockers.append((glob, candidates[blocker]))
            else:
                if blockers:
                    glob, blocker_cand = blockers[0]
                    found.append((cand, glob, blocker_cand))
        for glob in cand.entry.match:
            earlier.add(i, glob, stars_only=True)
    return found


def candidates_of(presets: Loaded[PresetFile], overlays: list[Loaded[OverlayFile]]
                  ) -> tuple[list[Candidate], list[Diagnostic]]:
    """Presets in matching order: overlays first (in the order given), then the base file's."""
    warnings: list[Diagnostic] = []
    out: list[Candidate] = []
    overlay_names: set[str] = set()
    for ov in overlays:
        for name, entry in ov.model.presets.items():
            if name in presets.model.presets and name not in overlay_names:
                warnings.append(ov.source.diag(
                    ("presets", name), "preset-replaced",
                    f"replaces the bundled preset {name!r} wholesale, value rules included",
                    "to add to it rather than replace it, give this preset another name", "warning"))
            if name in overlay_names:
                continue  # an earlier overlay already owns the name
            overlay_names.add(name)
            out.append(Candidate(name, entry, ov.source, "overlay"))
    for name, entry in presets.model.presets.items():
        if name not in overlay_names:
            out.append(Candidate(name, entry, presets.source, "bundled"))
    hidden: dict[str, list[tuple[Candidate, str, Candidate]]] = {}
    for cand, glob, blocker in shadowed_globs(out):
        if cand.origin == "bundled" and blocker.origin == "overlay":
            hidden.setdefault(blocker.name, []).append((cand, glob, blocker))  # reported once, below
            continue
        i = cand.entry.match.index(glob)
        warnings.append(cand.source.diag(
            ("presets", cand.name, "match", i), "shadowed-preset",
            f"preset {cand.name!r} can never match: earlier preset {blocker.name!r} "
            f"({blocker.source.display}) already matches everything {glob!r} does",
            "move this preset above the broader one (first match wins)", "warning"))
    for found in hidden.values():
        warnings.append(_hides_bundled(found))
    return out, warnings


def _hides_bundled(found: list[tuple[Candidate, str, Candidate]]) -> Diagnostic:
    """One warning at the overlay glob that hides bundled presets: the only place it can be fixed."""
    blocker = found[0][2]
    glob = next(g for g in blocker.entry.match if glob_covers(g, found[0][1]))
    names = [cand.name for cand, _, _ in found]
    shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
    return blocker.source.diag(
        ("presets", blocker.name, "match", blocker.entry.match.index(glob)), "hides-bundled-presets",
        f"glob {glob!r} of preset {blocker.name!r} matches every model name that {len(names)} bundled "
        f"preset(s) match ({shown}); overlay presets are tried first, so those can never apply",
        f"narrow {glob!r} to the names this preset is for (e.g. 'support-ft-*'); to select every model "
        "of one provider, use a `providers:` block (or `match_provider:` with a narrow `match:` glob)",
        "warning")
