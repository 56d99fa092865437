"""The server's one HTML page, rendered with jinja2 (autoescape on): styles and script inline, no external asset.

It shares the static view's stylesheet (``view/view.css.j2``), so both look alike; its own
rules and script sit beside this module. The page holds no data: its script fetches the
server's JSON and renders every value with ``textContent`` only.
"""

from __future__ import annotations

import functools
from pathlib import Path

import jinja2

_HERE = Path(__file__).resolve().parent
_VIEW = _HERE.parent / "view"


def _environment() -> jinja2.Environment:
    loader = jinja2.ChoiceLoader([jinja2.FileSystemLoader(str(_HERE)), jinja2.FileSystemLoader(str(_VIEW))])
    return jinja2.Environment(loader=loader, autoescape=True, undefined=jinja2.StrictUndefined,
                              keep_trailing_newline=True)


@functools.lru_cache(maxsize=8)
def render_app(*, folder: str) -> str:
    """The page's HTML; ``folder``: the served folder's name, for the title (rendered once: it holds no data)."""
    from capplan.trials.safe_text import plain

    return _environment().get_template("app.html.j2").render(title=f"capplan trial view: {plain(folder)}")
