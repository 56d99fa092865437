"""Scripted behaviours of the offline mock provider, declared as data in ``mock_agents.yaml``.

A mock model whose name (the part after ``mock/``) is a behaviour of that file plays it; any
other mock model echoes (:mod:`capplan.executor.mock_provider`). The behaviours exist so that
the bundled example tasks (``examples/trials/``) show what a real comparison looks like
offline: a careful agent that does every step, a sloppy one that skips some, and a user that
follows the example tasks' backstories.

How a behaviour answers is a function of the conversation alone, so the same conversation
always gets the same answer:

- the first scene whose ``when`` holds is played: ``user`` must be in the latest user-role
  message, ``system`` in the system prompt (both, when both are given);
- step *k* of that scene is played once *k* assistant messages follow that latest user
  message (a tool call, then its result, then the next step);
- past its last step, or when no scene holds, the behaviour's ``otherwise`` text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from capplan.core.default_factories import empty_dict
from capplan.core.reference_mode import speed_memo
from capplan.core.yaml_source import read_source

SCRIPTS_FILE = Path(__file__).with_name("mock_agents.yaml")


class _Data(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class When(_Data):
    """Where the conversation must stand for a scene to play."""

    user: str | None = Field(None, min_length=1, description="Text the latest user-role message contains.")
    system: str | None = Field(None, min_length=1, description="Text the system prompt contains.")

    @model_validator(mode="after")
    def _something(self) -> When:
        if self.user is None and self.system is None:
            raise ValueError("a scene's `when` names `user`, `system` or both")
        return self


class Step(_Data):
    """One answer: a tool call (``call`` and its ``arguments``) or a text (``say``)."""

    call: str | None = Field(None, min_length=1, description="The tool to call.")
    arguments: dict[str, Any] = Field(default_factory=empty_dict, description="The tool call's arguments.")
    say: str | None = Field(None, min_length=1, description="A text reply.")

    @model_validator(mode="after")
    def _one(self) -> Step:
        if (self.call is None) == (self.say is None):
            raise ValueError("a step is either `call` (with `arguments`) or `say`")
        if self.say is not None and self.arguments:
            raise ValueError("`arguments` belong to a `call` step")
        return self


class Scene(_Data):
    when: When
    steps: tuple[Step, ...] = Field(min_length=1)


class Behaviour(_Data):
    description: str = Field(min_length=1)
    scenes: tuple[Scene, ...] = ()
    otherwise: str = Field(min_length=1, description="The text played past a scene's steps or when none holds.")


class Scripts(_Data):
    behaviours: dict[str, Behaviour]


@speed_memo(1)
def scripts() -> Scripts:
    """The bundled behaviours, validated (a malformed file is capplan's bug, and fails loud)."""
    return Scripts.model_validate(read_source(SCRIPTS_FILE, "mock_agents.yaml").data)


def behaviour_name(model: str) -> str:
    """The behaviour a wire model name asks for: ``mock/careful-1`` → ``careful-1``."""
    return model.split("/", 1)[1] if "/" in model else model


def play(model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Step | None:
    """The scripted answer of ``model`` to ``messages``; None when the model has no behaviour (it echoes).

    A scripted call to a tool the request does not offer is answered in text instead: a script
    written for one task must not call a tool another task lacks.
    """
    behaviour = scripts().behaviours.get(behaviour_name(model))
    if behaviour is None:
        return None
    system = next((_text(m) for m in messages if m.get("role") == "system"), "")
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    latest = _text(messages[last_user]) if last_user >= 0 else ""
    answered = sum(1 for m in messages[last_user + 1:] if m.get("role") == "assistant")
    offered = {t.get("function", {}).get("name") for t in tools}
    for scene in behaviour.scenes:
        if scene.when.user is not None and scene.when.user not in latest:
            continue
        if scene.when.system is not None and scene.when.system not in system:
            continue
        if answered < len(scene.steps):
            step = scene.steps[answered]
            if step.call is None or step.call in offered:
                return step
        break
    return Step(say=behaviour.otherwise)


def arguments_json(step: Step) -> str:
    """A call step's arguments as the wire carries them."""
    return json.dumps(step.arguments, sort_keys=True, ensure_ascii=False)


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: only the text ones say anything
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""
