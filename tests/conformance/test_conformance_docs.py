"""docs/conformance.md is the command's own output for the bundled corpus: every rule with its source."""

from __future__ import annotations

from pathlib import Path

from capplan.conformance.corpus import load_corpus
from capplan.conformance.emulators import checks_by_protocol
from tests.cli_runner import invoke

PAGE = Path(__file__).resolve().parents[2] / "docs" / "conformance.md"
REGENERATE = "capplan conformance --list-rules --format markdown > docs/conformance.md"


def test_the_page_is_what_the_command_prints() -> None:
    result = invoke("conformance", "--list-rules", "--format", "markdown")
    assert result.exit_code == 0, result.output
    assert PAGE.read_text(encoding="utf-8") == result.stdout, f"docs/conformance.md drifted from the corpus; run: {REGENERATE}"


def test_every_rule_and_every_source_is_on_the_page() -> None:
    text = PAGE.read_text(encoding="utf-8")
    for rule in load_corpus(checks=checks_by_protocol()).rules:
        assert f"### `{rule.id}`" in text
        for source in rule.sources:
            assert f"<{source.url}> (observed {source.observed.isoformat()})" in text
