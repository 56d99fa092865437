"""The one self-contained HTML page of ``trial view``, rendered with jinja2 (autoescape on).

Styles and the script are inlined from the templates beside this module, and a Content
Security Policy refuses every network fetch, so the page works from ``file://`` with nothing
else. Data goes in as JSON inside ``<script type="application/json">`` elements: a script
element's text is never entity-decoded, so the JSON cannot be HTML-escaped by jinja; instead
every ``<``, ``>`` and ``&`` in it is written as a ``\\u`` escape (still the same JSON), so no
recorded text can close the element or open a comment. That escaped JSON is the only value
marked safe; every other value is autoescaped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from capplan.trials.outcome import PASS_RULE
from capplan.trials.report.view.payload import Payload

_HERE = Path(__file__).resolve().parent
_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def script_json(value: Any) -> Markup:
    """``value`` as JSON safe inside a ``<script type="application/json">`` element."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for raw, escaped in _ESCAPES.items():
        text = text.replace(raw, escaped)
    return Markup(text)  # noqa: S704 - escaped above for the script-data context, where entities do not apply


def _environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(_HERE)), autoescape=True,
                              undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


def render_page(payload: Payload, *, title: str) -> str:
    """The HTML text of the page."""
    template = _environment().get_template("view.html.j2")
    return template.render(title=title, generated_by=payload.index["generated_by"], pass_rule=PASS_RULE,
                           index_json=script_json(payload.index),
                           details=(script_json(d) for d in payload.details))
