"""A hostile rules file given to ``capplan conformance --corpus``: a located error, exit 2, no traceback, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from capplan.core.input_limits import MAX_CONFIG_BYTES, MAX_NESTING
from tests.cli_runner import invoke

PLANTED = "sk-proj-PLANTEDcanary0123456789abcdefABCDEF"

GOOD_RULE = """\
corpus_version: 1
rules:
  - id: x.planted
    title: a rule
    protocol: openai-chat
    routes: [openai]
    check: value_refused
    status: 400
    error: {error: {message: refused}}
    sources: [{url: "https://example.org/a", observed: 2025-01-01}]
"""

CASES = {
    "wrong_type": "corpus_version: 1\nrules: 5\n",
    "wrong_field_type": GOOD_RULE.replace("status: 400", "status: [400]"),
    "truncated": GOOD_RULE[: GOOD_RULE.index("check:") + 8] + "\n    status: [",
    "deep": "corpus_version: 1\nrules:\n  - id: x.deep\n    params: " + "[" * (MAX_NESTING + 5) + "]" * (MAX_NESTING + 5) + "\n",
    "planted_key": GOOD_RULE.replace("title: a rule", f"title: a rule\n    {PLANTED}: 1"),
    "huge": "corpus_version: 1\nrules: []\n# " + "x" * (MAX_CONFIG_BYTES + 10) + "\n",
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_hostile_rules_file_is_a_located_error(tmp_path: Path, case: str) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(CASES[case], encoding="utf-8")
    before = sorted(tmp_path.rglob("*"))
    result = invoke("conformance", "--corpus", str(rules), "--list-rules")
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    assert f"{rules}:" in result.stderr and "error[" in result.stderr
    assert PLANTED not in result.output  # a key that looks like a credential is never echoed
    assert sorted(tmp_path.rglob("*")) == before  # nothing written
