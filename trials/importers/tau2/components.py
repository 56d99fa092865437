"""τ²'s domain environments as capplan environment components.

A τ² pack's task names one component, ``capplan.trials.importers.tau2.components:AirlineTools``
(``RetailTools``, ``MockTools``). Each is made here, the first time it is named, from the
installed domain: every tool of the domain's agent toolkit becomes a method with the tool's own
signature, and an instance holds one τ² ``Environment`` built by the domain's own
``get_environment()`` -- so every trial gets a database loaded fresh from the package's file --
with the task's ``initialization_data`` and ``initialization_actions`` applied by τ²'s own
``set_state``, as its orchestrator does. A call is answered by τ²'s ``Environment.get_response``:
the result, or ``Error: ...`` when the tool raised, is exactly the text τ²'s agent reads, and
exactly what τ²'s evaluator finds when it replays the trajectory.

The state a trial records is the database hashes (agent and user side) τ²'s DB check compares:
the databases themselves are τ²'s to compare, and far larger than a record should hold.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any

from capplan.trials.importers.tau2.source import import_module

#: component class name -> the τ² domain it serves
CLASS_DOMAINS = {"AirlineTools": "airline", "RetailTools": "retail", "MockTools": "mock"}

# one class per domain for the life of the process: a task loaded twice must get the same class
# (its tools are looked up on it), so this is a cache correctness needs, not a speed-only one
_CLASSES: dict[str, type[Any]] = {}
_LOCK = threading.Lock()


def domain_class(name: str) -> type[Any]:
    """The component class called ``name`` (made from the installed domain the first time)."""
    with _LOCK:
        made = _CLASSES.get(name)
        if made is None:
            made = _CLASSES[name] = _make(name, CLASS_DOMAINS[name])
        return made


def __getattr__(name: str) -> Any:
    """``components:AirlineTools`` and its siblings, as a task's ref names them."""
    if name in CLASS_DOMAINS:
        return domain_class(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _make(name: str, domain: str) -> type[Any]:
    module = import_module(f"tau2.domains.{domain}.environment")
    messages = import_module("tau2.data_model.message")
    tasks = import_module("tau2.data_model.tasks")
    toolkit = type(module.get_environment().tools)

    def __init__(self: Any, initial_state: dict[str, Any] | None = None) -> None:
        environment = module.get_environment()
        if initial_state:
            state = tasks.InitialState.model_validate(initial_state)
            environment.set_state(initialization_data=state.initialization_data,
                                  initialization_actions=state.initialization_actions, message_history=[])
        self._environment = environment

    def state(self: Any) -> dict[str, Any]:
        return {"db_hash": self._environment.get_db_hash(), "user_db_hash": self._environment.get_user_db_hash()}

    def tool(tool_name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def call(self: Any, **arguments: Any) -> str:
            request = messages.ToolCall(id="", name=tool_name, arguments=arguments, requestor="assistant")
            content: str = self._environment.get_response(request).content
            return content

        signature = inspect.signature(original)
        call.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=[inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
                        *[p for p in signature.parameters.values() if p.name != "self"]])
        call.__name__ = call.__qualname__ = tool_name
        call.__doc__ = original.__doc__
        return call

    body: dict[str, Any] = {"__init__": __init__, "state": state, "__module__": __name__, "__qualname__": name,
                            "__doc__": f"τ²'s {domain} domain (agent tools), one fresh environment per instance."}
    for tool_name in toolkit(None).tools:
        body[tool_name] = tool(tool_name, getattr(toolkit, tool_name))
    return type(name, (), body)
