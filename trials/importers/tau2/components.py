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

Telecom gives its user tools of their own (dual control): ``TelecomUserTools`` is the user's
component, every tool of the domain's user toolkit (the phone) a method. It holds no environment
of its own: τ²'s telecom keeps the phone and the carrier's lines in one ``Environment`` that syncs
them after every call, so the user's component is handed the agent's (its ``peers``) and answers
through the same ``get_response`` with the user as requestor, exactly as τ²'s orchestrator runs a
user's call. Its state is the user database's hash.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any

from capplan.trials.importers.tau2.source import import_module

#: component class name -> the τ² domain it serves (the agent's side)
CLASS_DOMAINS = {"AirlineTools": "airline", "RetailTools": "retail", "MockTools": "mock", "TelecomTools": "telecom"}
#: the user's component class name -> the τ² domain whose user toolkit it serves (dual control)
USER_CLASS_DOMAINS = {"TelecomUserTools": "telecom"}
#: the constructor parameter a user component is handed the agent's component under (its ``peers``)
AGENT_PEER = "agent"

# one class per domain for the life of the process: a task loaded twice must get the same class
# (its tools are looked up on it), so this is a cache correctness needs, not a speed-only one
_CLASSES: dict[str, type[Any]] = {}
_LOCK = threading.Lock()


def domain_class(name: str) -> type[Any]:
    """The component class called ``name`` (made from the installed domain the first time)."""
    with _LOCK:
        made = _CLASSES.get(name)
        if made is None:
            made = _CLASSES[name] = (_make(name, CLASS_DOMAINS[name]) if name in CLASS_DOMAINS
                                     else _make_user(name, USER_CLASS_DOMAINS[name]))
        return made


def __getattr__(name: str) -> Any:
    """``components:AirlineTools`` and its siblings, as a task's ref names them."""
    if name in CLASS_DOMAINS or name in USER_CLASS_DOMAINS:
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

    body: dict[str, Any] = {"__init__": __init__, "state": state, "__module__": __name__, "__qualname__": name,
                            "__doc__": f"τ²'s {domain} domain (agent tools), one fresh environment per instance."}
    for tool_name in toolkit(None).tools:
        body[tool_name] = _tool(messages, tool_name, getattr(toolkit, tool_name), "assistant")
    return type(name, (), body)


def _tool(messages: Any, tool_name: str, original: Callable[..., Any], requestor: str) -> Callable[..., Any]:
    """A method with the τ² tool's own signature, answered by τ²'s ``get_response`` for ``requestor``."""
    def call(self: Any, **arguments: Any) -> str:
        request = messages.ToolCall(id="", name=tool_name, arguments=arguments, requestor=requestor)
        content: str = self._environment.get_response(request).content
        return content

    signature = inspect.signature(original)
    call.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
                    *[p for p in signature.parameters.values() if p.name != "self"]])
    call.__name__ = call.__qualname__ = tool_name
    call.__doc__ = original.__doc__
    return call


def _make_user(name: str, domain: str) -> type[Any]:
    module = import_module(f"tau2.domains.{domain}.environment")
    messages = import_module("tau2.data_model.message")
    toolkit = type(module.get_environment().user_tools)

    def __init__(self: Any, agent: Any) -> None:
        environment = getattr(agent, "_environment", None)
        if environment is None or environment.user_tools is None:
            raise TypeError(f"{name} needs the {domain} agent component as its peer ({AGENT_PEER}: ...)")
        self._environment = environment  # one world: the phone and the carrier's lines sync after every call

    def state(self: Any) -> dict[str, Any]:
        return {"user_db_hash": self._environment.get_user_db_hash()}

    body: dict[str, Any] = {"__init__": __init__, "state": state, "__module__": __name__, "__qualname__": name,
                            "__doc__": f"τ²'s {domain} domain (the user's own tools), on the agent component's "
                                       "environment."}
    for tool_name in toolkit(None).tools:
        body[tool_name] = _tool(messages, tool_name, getattr(toolkit, tool_name), "user")
    return type(name, (), body)
