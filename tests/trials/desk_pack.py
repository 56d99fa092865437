"""A task pack whose environment misbehaves on purpose, and an agent that calls the tool it is told to.

The environment (``desk_env.py``, written into the pack) has a well-behaved tool (``add``), tools
that raise what task code must never be able to raise out of a trial (``leave``: SystemExit,
``interrupt``: KeyboardInterrupt, ``close_gen``: GeneratorExit), one returning a dict whose keys
mix types (``mixed``), and one that hangs (``hang``) until a release file appears. The agent
(:func:`told_responder`) calls the tool a user turn names (``"call hang"``) and answers in text
after a tool result.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from tests.fake_provider import agent_completion, tool_call

DESK_ENV = '''
import os
import threading


class Desk:
    """A counter and a set of tools that misbehave."""

    def __init__(self, flags: str = "") -> None:
        self.flags = flags
        self.count = 0

    def add(self, amount: int) -> dict:
        self.count += amount
        return {"count": self.count}

    def leave(self) -> str:
        raise SystemExit(3)

    def interrupt(self) -> str:
        raise KeyboardInterrupt

    def close_gen(self) -> str:
        raise GeneratorExit

    def mixed(self) -> dict:
        return {1: "one", "two": 2, (3, 4): [5]}

    def hang(self) -> str:
        # tells the test it is hanging, then waits for the release file (or ten minutes)
        with open(os.path.join(self.flags, "hanging"), "a") as handle:
            handle.write("x")
        release = os.path.join(self.flags, "release")
        for _ in range(6000):
            if os.path.exists(release):
                return "released"
            threading.Event().wait(0.1)
        return "gave up"


class BrokenDesk(Desk):
    """Its constructor leaves the interpreter (the check before the run constructs nothing: a trial meets it)."""

    def __init__(self, flags: str = "") -> None:
        raise SystemExit("the environment refuses to start")


def grader_that_exits(trajectory, final_state, task):
    raise SystemExit(9)


def grader_with_odd_detail(trajectory, final_state, task):
    return {"passed": True, "detail": object()}
'''

TOOLS = """\
tools:
  - {name: add, description: Add to the count., parameters: {type: object, properties: {amount: {type: integer}}, required: [amount]}}
  - {name: leave, description: Leaves., parameters: {type: object, properties: {}}}
  - {name: interrupt, description: Interrupts., parameters: {type: object, properties: {}}}
  - {name: close_gen, description: Closes., parameters: {type: object, properties: {}}}
  - {name: mixed, description: Mixed keys., parameters: {type: object, properties: {}}}
  - {name: hang, description: Hangs., parameters: {type: object, properties: {}}}
"""


def write_desk_task(folder: Path, task_id: str, turns: list[str], *, flags: Path, env_class: str = "Desk",
                    extra: str = "") -> Path:
    """One task of the pack (the environment module is written beside it)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "desk_env.py").write_text(DESK_ENV)
    user = "user:\n  mode: scripted\n  turns:\n" + "".join(f"    - {json.dumps(t)}\n" for t in turns)
    text = (f"id: {task_id}\nsystem_prompt: You run a desk.\nenvironment: desk_env:{env_class}\n"
            f"environment_args: {{flags: {json.dumps(str(flags))}}}\n{TOOLS}{user}{textwrap.dedent(extra)}")
    path = folder / f"{task_id}.yaml"
    path.write_text(text)
    return path


def told_responder(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """Call the tool the last user turn names (``call NAME``), then answer in text after its result."""
    messages = body.get("messages", [])
    last = messages[-1] if messages else {}
    if last.get("role") == "user" and str(last.get("content", "")).startswith("call "):
        name = str(last["content"]).split()[1]
        arguments = {"amount": 1} if name == "add" else {}
        return 200, agent_completion(None, [tool_call(f"call_{len(messages)}", name, arguments)])
    return 200, agent_completion(f"done after {len(messages)} messages")
