"""GitHub Actions workflow commands: each change annotates the line of the input that set it.

A credential-routing change is a ``::warning`` titled ``capplan credential-routing-changed`` (a
distinct code a reviewer, or a problem matcher, can pick out); every other change is a
``::notice`` titled ``capplan plan-changed``. A change whose layer has no line in the working
tree (a bundled file, a removed key) is annotated without a file. The last line is the text
format's totals, as plain log output.
"""

from __future__ import annotations

from capplan.compiler.diff.blast import BlastRadius
from capplan.compiler.diff.model import Change, DiffReport
from capplan.compiler.diff.render.text import render_blast as _text_blast
from capplan.compiler.diff.render.text import totals
from capplan.compiler.diff.render.values import show

ROUTING_CODE = "credential-routing-changed"
CHANGE_CODE = "plan-changed"


def render_report(report: DiffReport) -> str:
    """One annotation per credential-routing change, then per model change, then the totals."""
    lines = []
    for r in report.credential_routing:
        c = r.change
        lines.append(_command("warning", ROUTING_CODE, c,
                              f"{r.model}: {r.aspect} {c.field}: {show(c.old)} → {show(c.new)} "
                              "(which credential is sent where; review before merging)"))
    for m in report.with_status("removed", "added", "changed"):
        if m.status != "changed":
            lines.append(_command("notice", CHANGE_CODE, None, f"{m.key}: model {m.status}"))
        for c in m.changes:
            lines.append(_command("notice", CHANGE_CODE, c, f"{m.key}: {c.check} {c.field}: {show(c.old)} → {show(c.new)}"))
    lines.append(totals(report))
    return "\n".join(lines) + "\n"


def render_blast(blast: BlastRadius) -> str:
    """The blast radius as plain log text, with one warning when credential routing changed."""
    head = []
    if blast.credential_routing:
        head.append(_command("warning", ROUTING_CODE, None,
                             "credential routing changed for " + ", ".join(blast.credential_routing)
                             + " (the full diff lists the fields; review before merging)"))
    return "".join(line + "\n" for line in head) + _text_blast(blast)


def _command(kind: str, code: str, change: Change | None, body: str) -> str:
    where = ""
    located = change.located if change is not None else None
    # a bundled file ("bundled:…") is not in the repository: nothing to annotate
    if located is not None and located.file and located.line and not located.file.startswith("bundled:"):
        where = f" file={_property(located.file)},line={located.line},"
    else:
        where = " "
    # workflow commands end at a newline: escape what GitHub reserves in the message and properties
    message = body.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return f"::{kind}{where}title=capplan {code}::{message}"


def _property(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A").replace(",", "%2C").replace(":", "%3A")
