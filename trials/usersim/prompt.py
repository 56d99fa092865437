"""The user simulator's system prompt, rendered from ``prompt.j2``.

The body is a fixed opening line, the task's Instruction when the task supplied a backstory,
and a ``Rules:`` block of twelve rules, with four tool rules appended when the simulator holds
tool schemas. The wording is free to change; four properties of the twelve are contract and
tests hold each: rule 1 puts the Instruction above every rule, the simulator does not correct
the agent, ``###STOP###`` is outcome-based, and the simulator never mentions the frame.

A change to the rendered body, the greeting or the request shape must bump
``SIMULATOR_SCHEMA_VERSION``: the test suite pins the version to a digest of canonical
renderings, so an edit without a bump fails.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any

import jinja2

from capplan.core.reference_mode import speed_memo

SIMULATOR_SCHEMA_VERSION = 1
"""Stamp recorded with every trajectory the simulator produces; bumped on any prompt or
request-shape change so results from different generations are never silently compared."""

STOP_SIGNAL = "###STOP###"
"""What the simulated user sends, as its whole message, to end the conversation."""

RULE_COUNT = 12
TOOL_RULE_COUNT = 4

_TEMPLATE_NAME = "prompt.j2"


@speed_memo(maxsize=1)  # parsing the template once is speed only
def _template() -> jinja2.Template:
    source = (
        resources.files("capplan.trials.usersim").joinpath(_TEMPLATE_NAME).read_text(encoding="utf-8")
    )
    env = jinja2.Environment(
        # The body is plain text for a model, never HTML: escaping would alter the backstory.
        autoescape=False,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )
    return env.from_string(source)


def render_system_prompt(
    backstory: str | None, *, tool_schemas: Sequence[Mapping[str, Any]] = ()
) -> str:
    """The simulator's system prompt for one task.

    ``backstory`` None renders no Instruction section at all (never an empty label); a blank
    string is refused rather than guessed to mean None. Non-empty ``tool_schemas`` append the
    four tool rules; the schemas themselves travel with the request, not in the body.
    """
    if backstory is not None and not backstory.strip():
        raise ValueError(
            "backstory is blank; pass None for a task without one, so the prompt carries no "
            "empty Instruction section"
        )
    return _template().render(
        backstory=backstory,
        has_tools=len(tool_schemas) > 0,
        stop_signal=STOP_SIGNAL,
    )
