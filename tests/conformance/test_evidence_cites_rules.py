"""Evidence that cites a conformance rule names one the corpus has (a renamed rule cannot leave a stale citation)."""

from __future__ import annotations

import re
from pathlib import Path

from capplan.conformance.corpus import load_corpus
from capplan.conformance.emulators import checks_by_protocol

ROOT = Path(__file__).resolve().parents[2]
CITED = re.compile(r"conformance rule ([a-z0-9_]+(?:\.[a-z0-9_]+)+)")


def test_every_rule_the_presets_cite_is_in_the_corpus() -> None:
    corpus = load_corpus(checks=checks_by_protocol())
    cited = {match.group(1) for path in sorted((ROOT / "presets").glob("*.yaml"))
             for match in CITED.finditer(path.read_text(encoding="utf-8"))}
    assert cited, "the presets cite no conformance rule: the pattern no longer finds the citations"
    assert sorted(cited - set(corpus.by_id)) == []
