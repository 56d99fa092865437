"""Renderers of a diff report and a blast radius: ``text``, ``markdown``, ``json``, ``github``."""

from __future__ import annotations

from collections.abc import Callable

from capplan.compiler.diff.blast import BlastRadius
from capplan.compiler.diff.model import DiffReport
from capplan.compiler.diff.render import github, json_out, markdown, text

FORMATS = ("text", "markdown", "json", "github")

_REPORT: dict[str, Callable[[DiffReport], str]] = {
    "text": text.render_report, "markdown": markdown.render_report, "json": json_out.render_report,
    "github": github.render_report}
_BLAST: dict[str, Callable[[BlastRadius], str]] = {
    "text": text.render_blast, "markdown": markdown.render_blast, "json": json_out.render_blast,
    "github": github.render_blast}


def render_report(report: DiffReport, fmt: str) -> str:
    """The full diff in ``fmt``."""
    return _REPORT[fmt](report)


def render_blast(blast: BlastRadius, fmt: str) -> str:
    """The blast radius (``--summary``) in ``fmt``."""
    return _BLAST[fmt](blast)
