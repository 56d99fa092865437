"""The task file: one agent task, as YAML, validated with located errors.

A task names its agent's system prompt, the tools it offers (each implemented by a public
method of the task's environment class), how the user speaks (a script or a backstory for the
LLM user simulator), an optional turn budget and an optional grader. ``schemas/task.schema.json``
is generated from :class:`TaskFile`, so editors validate task files as they are typed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr, StrictInt

from capplan.core.safe_names import check_name

_NAME = r"^[A-Za-z0-9_-]{1,64}$"
#: Finite bounds on the task's numbers: far above any real task, low enough that nothing downstream
#: (turn loops, prompt truncation) meets a number it cannot handle.
MAX_TASK_TURNS = 10_000
MAX_TOOL_OUTPUT_CHARS = 10_000_000


def _path_segment(value: str) -> str:
    """A task id and pack become folder names in the run folder: the one rule for those, where they are read."""
    return check_name(value, "the name")  # UnsafeName is a ValueError: pydantic reports it at the field


#: a name that becomes a path segment: the schema's pattern, then the one rule (no leading ``_`` or ``-``)
_SegmentName = Annotated[str, Field(pattern=_NAME), AfterValidator(_path_segment)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class TaskTool(_Model):
    """A tool the agent may call; the environment method of the same name implements it."""

    name: str = Field(pattern=_NAME, description="Tool name; must be a public method of the environment.")
    description: str = Field(description="What the tool does, as the agent reads it.")
    parameters: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}},
        description="JSON Schema of the arguments (an object schema).",
    )
    # strict: `'400'` or `true` is a wrong type, not a number
    output_max_chars: Annotated[StrictInt, Field(gt=0, le=MAX_TOOL_OUTPUT_CHARS)] | None = Field(
        None, description="Cap on this tool's output in the prompt; the tighter of this and the plan's cap wins."
    )


class ScriptedUser(_Model):
    """A user who says exactly these turns, in order, then stops."""

    mode: Literal["scripted"]
    turns: list[str] = Field(min_length=1, description="User turns, first to last; the conversation stops after the last.")


class LlmUser(_Model):
    """A user played by the LLM user simulator (run from ``--user-plan``, behind the reply guard)."""

    mode: Literal["llm"]
    backstory: str | None = Field(None, description="The simulator's Instruction: who the user is and what they want.")
    initial_message: str | None = Field(
        None, description="An authored first user turn, delivered verbatim instead of a generated opening."
    )


User = Annotated[Union[ScriptedUser, LlmUser], Field(discriminator="mode")]


class ExpectedAction(_Model):
    """A tool call that must have happened (tau-bench style)."""

    name: str = Field(pattern=_NAME, description="The tool that must have been called.")
    arguments: dict[str, Any] = Field(
        default_factory=dict, description="Arguments the call must have carried (each listed key must match exactly)."
    )


class Grader(_Model):
    """How a trial is graded; every grader given must pass."""

    expected_actions: list[ExpectedAction] | None = Field(
        None, description="Tool calls that must appear in the trajectory, in this order (other calls may interleave)."
    )
    expected_state: dict[str, Any] | None = Field(
        None, description="Keys of the environment's final state and the values they must hold."
    )
    function: str | None = Field(
        None,
        pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$",
        description="`package.module:function` called with (trajectory, final_state, task); returns bool or "
        "{passed: bool, detail: ...}.",
    )


class TaskFile(_Model):
    """One agent task."""

    id: _SegmentName = Field(description="Task id; unique within a run.")
    pack: _SegmentName | None = Field(None, description="Task pack name for the summary (default: the folder name).")
    system_prompt: str = Field(description="The agent's system prompt.")
    environment: str = Field(
        pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$",
        description="`package.module:ClassName` whose public methods are the tools; `pkg/mod.py` (or "
        "`pkg/mod/__init__.py`) in the task's folder, else an installed module. One fresh instance per trial.",
    )
    environment_args: dict[str, Any] = Field(default_factory=dict, description="Keyword arguments for the constructor.")
    tools: list[TaskTool] = Field(min_length=1, description="The tools offered to the agent.")
    user: User
    max_turns: Annotated[StrictInt, Field(gt=0, le=MAX_TASK_TURNS)] | None = Field(
        None, description="Agent-turn budget; the run's --max-turns caps it.")
    grader: Grader | None = Field(None, description="How the trial is graded; absent means ungraded.")
    # where the file was read from: its environment and grader modules are looked up there
    _folder: Path | None = PrivateAttr(default=None)

    @property
    def folder(self) -> Path | None:
        """The task file's folder (resolved), when the task was loaded from a file."""
        return self._folder

    def tool(self, name: str) -> TaskTool | None:
        return next((t for t in self.tools if t.name == name), None)

    def tool_specs(self) -> list[dict[str, Any]]:
        """The tools in the request shape (``{"type": "function", "function": {...}}``)."""
        return [
            {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
            for t in self.tools
        ]
