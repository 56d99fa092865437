"""Lint: a claim about a route whose evidence carries no date.

A ``param_value_rules`` entry and a ``litellm_models`` declaration must carry ``evidence`` (the
schema refuses them without). What the schema cannot see is whether that evidence can age: a
provider changes its contract, and a sentence with no date cannot be told apart from one written
yesterday, so neither ``capplan lint`` nor a reviewer can say when to measure again. A claim
whose evidence names no ``YYYY-MM-DD`` day is a warning here. Whether the sentence names its
source (a probe, a URL, an issue) is left to review: no rule tells a source from prose.

Every such claim capplan ships is dated (a test lints the bundled presets clean), so the warning
speaks only of files that add claims.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from capplan.compiler.checks import Block
from capplan.core.diagnostics import Diagnostic
from capplan.core.yaml_source import SourceFile

#: a calendar day anywhere in the sentence (``2026-11-02``); the month and day are checked loosely
DAY = re.compile(r"(?<!\d)\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])(?!\d)")
HINT = ("write the day it was observed and where (e.g. \"2026-11-02, capplan probe of …\" or \"2026-11-02 "
        "https://…\"); `capplan probe --out DIR` writes dated evidence for you")


def dated(text: str) -> bool:
    return DAY.search(text) is not None


def undated_rules(source: SourceFile, blocks: Iterable[Block]) -> list[Diagnostic]:
    """A warning for each ``param_value_rules`` entry whose evidence names no day."""
    out: list[Diagnostic] = []
    for loc, block in blocks:
        params = getattr(block, "params", None)
        rules: dict[str, dict[Any, Any]] = getattr(params, "param_value_rules", None) or {}
        for param, by_value in rules.items():
            for value, rule in by_value.items():
                if not dated(rule.evidence):
                    out.append(source.diag((*loc, "params", "param_value_rules", param, value, "evidence"),
                                           "evidence-undated",
                                           f"the rule for {param} {value} rests on evidence with no date, so no one "
                                           "can tell when to check it again", HINT, severity="warning"))
    return out


def undated_declarations(source: SourceFile, decls: dict[str, Any]) -> list[Diagnostic]:
    """A warning for each ``litellm_models`` declaration whose evidence names no day."""
    return [source.diag(("litellm_models", key, "evidence"), "evidence-undated",
                        f"the declaration for {key} rests on evidence with no date, so no one can tell when to "
                        "check it again", HINT, severity="warning")
            for key, decl in decls.items() if not dated(decl.evidence)]
