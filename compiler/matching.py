"""Preset matching: the first preset whose globs match the model wins.

Globs are fnmatch patterns compared case-insensitively against ModelConfig.name; a preset with
``match_provider`` also matches every model whose provider matches one of those globs.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase

from compiler.diagnostics import Diagnostic
from compiler.inputs.overlay_file import OverlayFile
from compiler.inputs.preset_file import PresetEntry, PresetFile
from compiler.loading import Loaded
from compiler.yaml_source import SourceFile


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
    if any(fnmatchcase(lowered, glob.lower()) for glob in entry.match):
        return True
    return any(fnmatchcase(provider.lower(), glob.lower()) for glob in entry.match_provider or ())


def first_match(candidates: list[Candidate], name: str, provider: str) -> Candidate | None:
    """The first candidate that matches, or None (the model gets only the default layer)."""
    return next((c for c in candidates if preset_matches(c.entry, name, provider)), None)


def glob_covers(earlier: str, later: str) -> bool:
    """True when every name ``later`` matches is also matched by ``earlier``.

    Decided only for globs whose sole wildcard is ``*``: then ``earlier`` matching the literal
    text of ``later`` proves coverage (each of its stars can absorb what a star of ``later``
    expands to). Anything with ``?`` or ``[`` is never claimed to be covered.
    """
    if any(ch in glob for glob in (earlier, later) for ch in "?["):
        return False
    return fnmatchcase(later.lower(), earlier.lower())


def shadowed_globs(candidates: list[Candidate]) -> list[tuple[Candidate, str, Candidate]]:
    """(preset, glob, earlier preset) for presets none of whose globs can ever win.

    A preset that also matches by provider is never reported: its provider route still works.
    """
    found = []
    for i, cand in enumerate(candidates):
        if cand.entry.match_provider:
            continue
        blockers = []
        for glob in cand.entry.match:
            blocker = next((e for e in candidates[:i] if any(glob_covers(g, glob) for g in e.entry.match)), None)
            if blocker is None:
                break
            blockers.append((glob, blocker))
        else:
            glob, blocker = blockers[0]
            found.append((cand, glob, blocker))
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
    for cand, glob, blocker in shadowed_globs(out):
        i = cand.entry.match.index(glob)
        warnings.append(cand.source.diag(
            ("presets", cand.name, "match", i), "shadowed-preset",
            f"preset {cand.name!r} can never match: earlier preset {blocker.name!r} "
            f"({blocker.source.display}) already matches everything {glob!r} does",
            "move this preset above the broader one (first match wins)", "warning"))
    return out, warnings
