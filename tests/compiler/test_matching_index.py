"""The glob index answers exactly what a scan of every glob answers."""

from __future__ import annotations

import random
from typing import Any

from capplan.compiler.inputs.preset_file import PresetEntry
from capplan.compiler.matching import Candidate, Matcher, first_match, glob_covers, shadowed_globs

PIECES = ["openai/", "gpt-", "5", "claude", "-opus", "x", "*", "*", "?", "[ab]", "Gemini", "/", "4.7"]


def glob(rng: random.Random) -> str:
    return "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 4)))


def candidates(rng: random.Random, n: int) -> list[Candidate]:
    out = []
    for i in range(n):
        data: dict[str, Any] = {"match": [glob(rng) for _ in range(rng.randint(1, 3))]}
        if rng.random() < 0.1:
            data["match_provider"] = [rng.choice(["openrouter", "open*", "anthropic", "x?ai"])]
        out.append(Candidate(f"p{i}", PresetEntry.model_validate(data), None, "bundled"))  # type: ignore[arg-type]
    return out


def scanned_shadows(cands: list[Candidate]) -> list[tuple[str, str, str]]:
    found = []
    for i, cand in enumerate(cands):
        if cand.entry.match_provider:
            continue
        blockers = []
        for g in cand.entry.match:
            blocker = next((e for e in cands[:i] if any(glob_covers(x, g) for x in e.entry.match)), None)
            if blocker is None:
                break
            blockers.append((g, blocker))
        else:
            found.append((cand.name, blockers[0][0], blockers[0][1].name))
    return found


def test_first_match_and_shadowing_agree_with_the_scan() -> None:
    rng = random.Random(7)
    for _ in range(40):
        cands = candidates(rng, 30)
        matcher = Matcher(cands)
        for _ in range(60):
            name = "".join(rng.choice(PIECES).replace("*", "zz").replace("?", "q").replace("[ab]", "a")
                           for _ in range(rng.randint(1, 5)))
            provider = rng.choice(["openrouter", "openai", "anthropic", "xyai", "OpenRouter"])
            assert matcher.first(name, provider) is first_match(cands, name, provider)
        assert [(c.name, g, b.name) for c, g, b in shadowed_globs(cands)] == scanned_shadows(cands)
