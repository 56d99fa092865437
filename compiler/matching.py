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

from capplan.core.diagnostics import Diagnostic
from capplan.compiler.inputs.overlay_file import OverlayFile
from capplan.compiler.inputs.preset_file import PresetEntry, PresetFile
from capplan.compiler.loading import Loaded
from capplan.core.yaml_source import SourceFile


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


class GlobIndex:
    """Globs by owner position, answering "the first owner with a glob that matches this text".

    A scan tries every glob of every owner; the index looks only where a match is possible. A
    glob without wildcards is a dict key. A glob whose only wildcard is ``*`` sits under its
    literal prefix, and only the buckets of the text's own prefixes are tried (as many as the
    text has characters). Globs with ``?`` or ``[`` are few and tried in order. Everything is
    compared lower-cased, as matching does.
    """

    def __init__(self) -> None:
        self._literal: dict[str, int] = {}
        self._by_prefix: dict[str, list[tuple[int, str]]] = {}
        self._other: list[tuple[int, str]] = []

    def add(self, position: int, glob: str, *, stars_only: bool = False) -> None:
        """Index ``glob`` for the owner at ``position`` (added in increasing order).

        ``stars_only`` leaves out globs with ``?`` or ``[`` (coverage is never claimed for them).
        """
        lowered = glob.lower()
        if _has_class(lowered):
            if not stars_only:
                self._other.append((position, lowered))
        elif "*" not in lowered:
            self._literal.setdefault(lowered, position)
        else:
            self._by_prefix.setdefault(lowered.split("*", 1)[0], []).append((position, lowered))

    def first(self, text: str, before: int | None = None) -> int | None:
        """The lowest position whose glob matches ``text`` (only positions below ``before``)."""
        lowered = text.lower()
        limit = before if before is not None else float("inf")
        best = self._literal.get(lowered)
        if best is not None and best >= limit:
            best = None
        for k in range(len(lowered) + 1):
            for position, glob in self._by_prefix.get(lowered[:k], ()):
                if position >= limit or (best is not None and position >= best):
                    break  # buckets are in position order
                if star_match(lowered, glob):
                    best = position
                    break
        for position, glob in self._other:
            if position >= limit or (best is not None and position >= best):
                break
            if fnmatchcase(lowered, glob):
                best = position
                break
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
