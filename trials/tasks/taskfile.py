"""The task file: one agent task, as YAML, validated with located errors.

A task names its agent's system prompt, the tools it offers (each implemented by a public
method of one of the task's environment components), how the user speaks (a script or a
backstory for the LLM user simulator), an optional turn budget, per-task loop choices
(argument validation, ``tool_choice``, step and time limits), free-form ``metadata`` and an
optional grader. ``schemas/task.schema.json`` is generated from :class:`TaskFile`, so editors
validate task files as they are typed.

Every field added after the first release is optional, and a task file written before it keeps
its meaning: ``environment: pkg.mod:Class`` (with ``environment_args``) is one component whose
state is flat ``{attr: value}``; a list of components gives ``{component_name: {attr: value}}``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr, StrictBool, StrictInt, model_validator

from capplan.core.default_factories import empty_dict, empty_list
from capplan.core.safe_names import check_name
from capplan.trials.tasks.code_refs import DISTRIBUTION_NAME

_NAME = r"^[A-Za-z0-9_-]{1,64}$"
#: Finite bounds on the task's numbers: far above any real task, low enough that nothing downstream
#: (turn loops, prompt truncation) meets a number it cannot handle.
MAX_TASK_TURNS = 10_000
MAX_TOOL_OUTPUT_CHARS = 10_000_000
MAX_TIMEOUT_S = 86_400.0
#: ``package.module:Name`` (an installed module, or ``pkg/mod.py`` in the task's folder)
MODULE_REF = r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$"
#: ``rel/path.py:Name``: a Python file relative to the task file's folder
PATH_REF = r"^[^:\x00]*\.py:[A-Za-z_]\w*$"
_IDENTIFIER = r"^[A-Za-z_]\w{0,63}$"
#: Bounds on the user's side (dual control): far above τ²'s telecom (30 user tools, one component).
MAX_USER_TOOLS = 256
MAX_USER_COMPONENTS = 16
MAX_USER_TOOL_STEPS = 100
DEFAULT_USER_TOOL_STEPS = 16


def _path_segment(value: str) -> str:
    """A task id and pack become folder names in the run folder: the one rule for those, where they are read."""
    return check_name(value, "the name")  # UnsafeName is a ValueError: pydantic reports it at the field


#: a name that becomes a path segment: the schema's pattern, then the one rule (no leading ``_`` or ``-``)
_SegmentName = Annotated[str, Field(pattern=_NAME), AfterValidator(_path_segment)]


def _relative_ref(value: str) -> str:
    """A ``path.py:Name`` ref names a file relative to the task: never an absolute path."""
    path = value.rpartition(":")[0]
    if path.startswith(("/", "\\")) or (len(path) > 1 and path[1] == ":"):
        raise ValueError("a path ref is relative to the task file's folder, not an absolute path")
    return value


#: a code reference: ``package.module:Name`` or ``rel/path.py:Name``
CodeRef = Annotated[
    str,
    Field(pattern=f"{MODULE_REF}|{PATH_REF}",
          description="`package.module:Name` (a module in the task's folder, else one of a distribution the task "
                      "declares under requires:) or `rel/path.py:Name` (a file in the task file's folder)."),
    AfterValidator(_relative_ref),
]
_Seconds = Annotated[float, Field(gt=0, le=MAX_TIMEOUT_S, allow_inf_nan=False)]


def ref_parts(ref: str) -> tuple[str, str]:
    """``(module or path, name)`` of a :data:`CodeRef`."""
    where, _, name = ref.rpartition(":")
    return where, name


def is_path_ref(ref: str) -> bool:
    """Whether ``ref`` names a ``.py`` file (relative to the task) rather than a module."""
    return ref_parts(ref)[0].endswith(".py")


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
    timeout_s: _Seconds | None = Field(
        None, description="Seconds one call of this tool may take before it ends with an Error: result "
                          "(default: the task's tool_timeout_s, else the runner's default).")
    available_from_turn: Annotated[StrictInt, Field(ge=0, le=MAX_TASK_TURNS)] | None = Field(
        None, description="0-based index of the user turn from which the tool is offered (absent: from the start).")


class SetupCall(_Model):
    """A method called once on a component right after it is constructed (e.g. loading a scenario)."""

    method: str = Field(pattern=_IDENTIFIER, description="The component's method to call.")
    args: dict[str, Any] = Field(default_factory=empty_dict, description="Keyword arguments for it.")


class EnvironmentComponent(_Model):
    """One class of a task's environment; its public methods are tools."""

    ref: CodeRef
    args: dict[str, Any] = Field(default_factory=empty_dict, description="Keyword arguments for the constructor.")
    name: str | None = Field(None, pattern=_IDENTIFIER,
                             description="The component's key in the state (default: the class name).")
    setup: SetupCall | None = Field(None, description="A method called once after construction.")
    peers: dict[Annotated[str, Field(pattern=_IDENTIFIER)], Annotated[str, Field(pattern=_IDENTIFIER)]] = Field(
        default_factory=empty_dict, max_length=16,
        description="User components only: constructor keyword arguments given the trial's agent-side components "
                    "by name ({parameter: component name}), for a user's world that shares state with the agent's "
                    "(a phone and the carrier's line).")
    ignore_methods: list[Annotated[str, Field(pattern=_IDENTIFIER)]] = Field(
        default_factory=empty_list, description="Public methods that are not tools (lint does not ask for them to be declared).")

    @property
    def component_name(self) -> str:
        return self.name or ref_parts(self.ref)[1]


class NamedToolChoice(_Model):
    """``tool_choice`` forcing one named tool."""

    name: str = Field(pattern=_NAME, description="The tool the agent must call.")


ToolChoice = Literal["auto", "required", "none"] | NamedToolChoice


class ScriptedUser(_Model):
    """A user who says exactly these turns, in order, then stops."""

    mode: Literal["scripted"]
    turns: list[str] = Field(min_length=1, description="User turns, first to last; the conversation stops after the last.")


#: the termination reasons a simulated user's own stop signal may end a trial with (``stop_signals``)
UserEnd = Literal["user_stop", "user_transfer", "user_out_of_scope"]


class LlmUser(_Model):
    """A user played by the LLM user simulator (run from ``--user-plan``, behind the reply guard)."""

    mode: Literal["llm"]
    backstory: str | None = Field(None, description="The simulator's Instruction: who the user is and what they want.")
    initial_message: str | None = Field(
        None, description="An authored first user turn, delivered verbatim instead of a generated opening."
    )
    stop_signals: dict[Annotated[str, Field(min_length=1, max_length=64)], UserEnd] = Field(
        default_factory=empty_dict, max_length=16,  # each simulated turn is searched for every one
        description="Texts besides ###STOP### that end the conversation when a simulated user turn contains one, each "
                    "with the termination reason it ends the trial with (e.g. τ²-bench's ###TRANSFER###: "
                    "user_transfer). ###STOP### is checked first.")
    tools: Annotated[list[TaskTool], Field(max_length=MAX_USER_TOOLS)] = Field(
        default_factory=empty_list,
        description="The user's own tools (dual control): each a public method of one of the user's environment "
                    "components; the simulator calls them in its own tool loop, the agent never sees them.")
    environment: Annotated[list[EnvironmentComponent], Field(max_length=MAX_USER_COMPONENTS)] = Field(
        default_factory=empty_list,
        description="The user's own environment components: built fresh per trial after the agent's, their state "
                    "recorded apart (final_user_state); the agent cannot call or read them.")
    max_tool_steps: Annotated[StrictInt, Field(gt=0, le=MAX_USER_TOOL_STEPS)] = Field(
        DEFAULT_USER_TOOL_STEPS, description="Tool-calling completions the simulator may make within one user turn "
                                             "before it must answer in words (past it the trial ends error).")

    @model_validator(mode="after")
    def _tools_need_components(self) -> LlmUser:
        if self.tools and not self.environment:
            raise ValueError("user tools are methods of the user's environment components: give user.environment")
        names = [t.name for t in self.tools]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"user tool {twice[0]!r} is declared twice")
        return self


User = Annotated[ScriptedUser | LlmUser, Field(discriminator="mode")]


class ExpectedAction(_Model):
    """A tool call that must have happened (tau-bench style)."""

    name: str = Field(pattern=_NAME, description="The tool that must have been called.")
    arguments: dict[str, Any] = Field(
        default_factory=empty_dict, description="Arguments the call must have carried (each listed key must match exactly)."
    )


#: the keywords capplan passes a custom grader that declares them (its own ``args`` may not use these names)
GRADER_KEYWORDS = ("metadata", "checkpoints", "turn", "judge")


class GraderFunction(_Model):
    """A custom grader: a function, its keyword arguments, and when it runs."""

    ref: CodeRef
    args: dict[str, Any] = Field(default_factory=empty_dict, description="Extra keyword arguments the function receives.")
    when: Literal["end", "each_turn"] = Field(
        "end", description="end: once, on the final state; each_turn: on every user turn's checkpoint as well.")


class TurnExpectation(_Model):
    """What must hold at the end of one user turn (entry i: user turn i, 0-based)."""

    expected_state: dict[str, Any] | None = Field(
        None, description="Keys of the state and the values they must hold at the end of this user turn.")
    expected_outputs: list[str] | None = Field(
        None, description="Tool outputs (as text) that must all be among the agent's tool outputs so far, "
                          "as an unordered sub-multiset.")
    requires_calls: StrictBool = Field(
        False, description="The agent must call tools in this user turn, in completions whose argument texts are "
                           "all JSON objects as sent (BFCL fails a turn whose ground truth makes calls when the "
                           "model made none, even if the state already matches, and refuses a completion whose "
                           "arguments are not JSON, which capplan repairs to run).")


class Grader(_Model):
    """How a trial is graded; every grader given must pass."""

    expected_actions: list[ExpectedAction] | None = Field(
        None, description="Tool calls that must appear in the trajectory, in this order (other calls may interleave)."
    )
    expected_state: dict[str, Any] | None = Field(
        None, description="Keys of the environment's final state and the values they must hold."
    )
    expected_outputs: list[str] | None = Field(
        None, description="Tool outputs (as text) that must all be among the agent's tool outputs, as an "
                          "unordered sub-multiset.")
    per_turn: list[TurnExpectation] | None = Field(
        None, description="Entry i is checked at the end of user turn i (0-based).")
    function: Annotated[str, Field(pattern=MODULE_REF)] | GraderFunction | None = Field(
        None,
        description="`package.module:function`, or {ref, args, when}; called as fn(trajectory, final_state, task, "
        "**args) with metadata= and checkpoints= when it accepts them; returns bool or "
        "{passed: bool, score?: number, detail?: JSON}.",
    )

    @property
    def function_ref(self) -> GraderFunction | None:
        """The custom grader in its full form (the string form is ``{ref: ..., when: end}``)."""
        if self.function is None or isinstance(self.function, GraderFunction):
            return self.function
        return GraderFunction(ref=self.function)


class TaskFile(_Model):
    """One agent task."""

    id: _SegmentName = Field(description="Task id; unique within a run.")
    pack: _SegmentName | None = Field(None, description="Task pack name for the summary (default: the folder name).")
    system_prompt: str = Field(description="The agent's system prompt.")
    environment: Annotated[str, Field(pattern=MODULE_REF)] | Annotated[
        list[EnvironmentComponent], Field(min_length=1)] = Field(
        description="`package.module:ClassName` whose public methods are the tools (`pkg/mod.py` or "
        "`pkg/mod/__init__.py` in the task's folder, else a module of a distribution under requires:), or a list of "
        "components. "
        "One fresh set per trial.",
    )
    requires: Annotated[list[Annotated[str, Field(pattern=DISTRIBUTION_NAME)]], Field(max_length=64)] = Field(
        default_factory=empty_list,
        description="Installed distributions (as pip names them, e.g. bfcl-eval) whose modules the task's refs may "
                    "name; a ref outside the task file's folder must be a module of one of them, never of the "
                    "standard library or anything else on sys.path.")
    environment_args: dict[str, Any] = Field(
        default_factory=empty_dict, description="Keyword arguments for the constructor (the string form of environment).")
    tools: list[TaskTool] = Field(min_length=1, description="The tools offered to the agent.")
    user: User
    max_turns: Annotated[StrictInt, Field(gt=0, le=MAX_TASK_TURNS)] | None = Field(
        None, description="Agent-turn budget; the run's --max-turns caps it.")
    max_steps_per_turn: Annotated[StrictInt, Field(gt=0, le=MAX_TASK_TURNS)] | None = Field(
        None, description="Agent completions allowed within one user turn (its own termination reason).")
    argument_validation: Literal["enforce", "record", "off"] = Field(
        "enforce", description="enforce: a call whose arguments break the schema is refused; record: it runs and "
        "the violation is recorded; off: not checked.")
    tool_choice: ToolChoice | None = Field(
        None, description="auto | required | none | {name: tool}; sent on the wire (the run config may set it too).")
    parallel_tool_calls: StrictBool | None = Field(None, description="Sent on the wire when set.")
    tool_timeout_s: _Seconds | None = Field(
        None, description="Seconds a tool call may take before it ends with an Error: result (a tool's own "
                          "timeout_s wins).")
    metadata: dict[str, Any] = Field(
        default_factory=empty_dict, description="Free-form data recorded with the trial and passed to graders.")
    grader: Grader | None = Field(None, description="How the trial is graded; absent means ungraded.")
    # where the file was read from: its environment and grader modules are looked up there
    _folder: Path | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _args_belong_to_string_form(self) -> TaskFile:
        if isinstance(self.environment, list) and self.environment_args:
            raise ValueError("environment_args goes with `environment: pkg.mod:Class`; with a list of components "
                             "give each component its own args:")
        return self

    @property
    def components(self) -> list[EnvironmentComponent]:
        """The environment as components (the string form is one component)."""
        if isinstance(self.environment, list):
            return list(self.environment)
        return [EnvironmentComponent(ref=self.environment, args=self.environment_args)]

    @property
    def user_components(self) -> list[EnvironmentComponent]:
        """The user's own environment components (dual control); none for a scripted user."""
        return list(self.user.environment) if isinstance(self.user, LlmUser) else []

    @property
    def user_tools(self) -> list[TaskTool]:
        """The user's own tools (dual control); none for a scripted user."""
        return list(self.user.tools) if isinstance(self.user, LlmUser) else []

    @property
    def flat_state(self) -> bool:
        """The string form's state is ``{attr: value}``; a component list's is ``{component: {attr: value}}``."""
        return isinstance(self.environment, str)

    def code_refs(self) -> list[str]:
        """Every code reference the task names (its components, then its grader function), as written."""
        refs = [c.ref for c in self.components] + [c.ref for c in self.user_components]
        function = self.grader.function_ref if self.grader is not None else None
        return refs + ([function.ref] if function is not None else [])

    @property
    def folder(self) -> Path | None:
        """The task file's folder (resolved), when the task was loaded from a file."""
        return self._folder

    def tool(self, name: str) -> TaskTool | None:
        return next((t for t in self.tools if t.name == name), None)

    def tool_specs(self) -> list[dict[str, Any]]:
        """The tools in the request shape (``{"type": "function", "function": {...}}``)."""
        return request_tools(self.tools)

    def user_tool_specs(self) -> list[dict[str, Any]]:
        """The user's own tools in the request shape."""
        return request_tools(self.user_tools)


def request_tools(tools: list[TaskTool]) -> list[dict[str, Any]]:
    """Tools in the request shape (``{"type": "function", "function": {...}}``)."""
    return [{"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
            for t in tools]
