"""A scripted BFCL agent: a loopback OpenAI-compatible server that replays each task's calls per turn.

The server is the test's :class:`~tests.fake_provider.FakeProvider`; this module is its
responder. It tells the tasks of a pack apart by what a real model sees -- the user messages so
far and the tools offered -- and answers each request with the next step of that task's script
for the current user turn: a completion carrying that step's tool calls, or, when the turn's
steps are done, a text answer. A script is the ground truth (one step per user turn holding all
of the turn's calls) or a deviation from it built by the functions below.
"""

from __future__ import annotations

import copy
import functools
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from capplan.trials.importers.bfcl import source
from capplan.trials.importers.bfcl.ground_truth import Call
from capplan.trials.importers.bfcl.pack import task_document
from tests.fake_provider import agent_completion, tool_call

@dataclass(frozen=True)
class SentCall:
    """A call whose argument text is sent exactly as given (arguments that may not be JSON)."""

    name: str
    text: str


#: a step computes its calls from the conversation so far (to use an earlier tool result)
DynamicStep = Callable[[list[dict[str, Any]]], list[Call]]
Step = list[Call | SentCall] | DynamicStep
#: per user turn, the steps the agent takes before it answers in text
Script = list[list[Step]]


@dataclass
class ScriptedTask:
    entry_id: str
    turns: list[str]
    #: every tool of the task, and the turn each becomes available (0 when from the start)
    tools: dict[str, int]
    ground_truth: list[list[Call]]
    script: Script


def ground_truth_script(calls: list[list[Call]]) -> Script:
    """The ground truth: each user turn's calls in one step (an empty turn: no step, a text answer)."""
    return [[list(turn)] if turn else [] for turn in calls]


@functools.lru_cache(maxsize=8)
def _category_tasks(category: str) -> tuple[ScriptedTask, ...]:
    bench = source.load(category)
    tasks = []
    for entry in bench.entries:
        document, calls = task_document(bench, entry, "builtin")
        tools = {t["name"]: int(t.get("available_from_turn", 0)) for t in document["tools"]}
        tasks.append(ScriptedTask(entry.id, document["user"]["turns"], tools, calls, ground_truth_script(calls)))
    return tuple(tasks)


def load_tasks(category: str, limit: int | None = None) -> list[ScriptedTask]:
    """The category's entries with their ground truth as calls (the importer's own parse; read once)."""
    return list(_category_tasks(category)[:limit])


def _shown(script: Script) -> str:
    """A script's turns as text (a dynamic step by its function's name), to compare two scripts."""
    return repr([[step.__name__ if callable(step) else step for step in turn] for turn in script])


class ScriptedAgent:
    """The responder: ``FakeProvider(on_body(ScriptedAgent(tasks)))``."""

    def __init__(self, tasks: list[ScriptedTask]) -> None:
        self.tasks = tasks
        self.lock = threading.Lock()
        self.unmatched: list[str] = []

    def _task(self, users: list[str], offered: set[str]) -> ScriptedTask:
        turn = len(users) - 1
        found = [t for t in self.tasks if t.turns[:len(users)] == users
                 and offered == {name for name, start in t.tools.items() if start <= turn}]
        # two entries may open alike (same question, same classes): while their scripts agree so far,
        # either one answers; the next user turn tells them apart
        if not found or any(_shown(t.script[:len(users)]) != _shown(found[0].script[:len(users)]) for t in found):
            raise LookupError(f"{len(found)} tasks match the conversation {users[:1]!r}")
        return found[0]

    def __call__(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        messages = body.get("messages") or []
        users = [str(m.get("content")) for m in messages if m.get("role") == "user"]
        offered = {t["function"]["name"] for t in body.get("tools") or []}
        try:
            task = self._task(users, offered)
        except LookupError as exc:
            with self.lock:
                self.unmatched.append(str(exc))
            return 500, {"error": {"message": str(exc), "type": "server_error"}}
        turn = len(users) - 1
        last_user = max(i for i, m in enumerate(messages) if m.get("role") == "user")
        step = sum(1 for m in messages[last_user:] if m.get("role") == "assistant")
        steps = task.script[turn]
        if step >= len(steps):
            return 200, agent_completion(f"turn {turn} done")
        planned = steps[step]
        calls = planned(messages) if callable(planned) else planned
        if not calls:
            return 200, agent_completion(f"turn {turn} done")
        return 200, agent_completion(None, [
            tool_call(f"call_{turn}_{step}_{i}", c.name, c.text if isinstance(c, SentCall) else c.arguments)
            for i, c in enumerate(calls)])


# --- deviations ---------------------------------------------------------------------------

#: a read-only call per class, for the "extra harmless call" agent
HARMLESS = {
    "GorillaFileSystem": Call("pwd", {}),
    "MessageAPI": Call("list_users", {}),
    "TicketAPI": Call("ticket_get_login_status", {}),
    "TradingBot": Call("trading_get_login_status", {}),
    "TravelAPI": Call("travel_get_login_status", {}),
    "TwitterAPI": Call("posting_get_login_status", {}),
    "VehicleControlAPI": Call("get_current_speed", {}),
}


def _first_turn_with_calls(calls: list[list[Call]]) -> int | None:
    return next((i for i, turn in enumerate(calls) if turn), None)


def omit_one(task: ScriptedTask) -> Script | None:
    """The last call of the first user turn that has calls is never made."""
    turn = _first_turn_with_calls(task.ground_truth)
    if turn is None:
        return None
    calls = copy.deepcopy(task.ground_truth)
    calls[turn] = calls[turn][:-1]
    return ground_truth_script(calls)


def _changed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "_x"
    if isinstance(value, list):
        return value[:-1] if value else ["x"]
    if isinstance(value, dict):
        return {**value, "x": 1}
    return "x"


def change_argument(task: ScriptedTask) -> Script | None:
    """The first argument of the first call that has one gets another value."""
    calls = copy.deepcopy(task.ground_truth)
    for turn in calls:
        for call in turn:
            if call.arguments:
                key = next(iter(call.arguments))
                call.arguments[key] = _changed(call.arguments[key])
                return ground_truth_script(calls)
    return None


def _booking_id(messages: list[dict[str, Any]]) -> str:
    """The booking id in the last tool result (book_flight's answer)."""
    last = next(m for m in reversed(messages) if m.get("role") == "tool")
    return str(json.loads(last["content"]).get("booking_id"))


def book_then_cancel(task: ScriptedTask) -> Script | None:
    """At the first turn that books a flight: the turn's calls, the same booking again, then its cancellation."""
    for index, turn in enumerate(task.ground_truth):
        booking = next((c for c in turn if c.name == "book_flight"), None)
        if booking is None:
            continue
        script = ground_truth_script(task.ground_truth)
        token = booking.arguments.get("access_token")

        def cancel(messages: list[dict[str, Any]], token: Any = token) -> list[Call]:
            return [Call("cancel_booking", {"access_token": token, "booking_id": _booking_id(messages)})]

        script[index] = [list(turn), [Call(booking.name, dict(booking.arguments))], cancel]
        return script
    return None


def extra_harmless_call(task: ScriptedTask) -> Script | None:
    """One extra read-only call before the first turn's calls."""
    turn = _first_turn_with_calls(task.ground_truth)
    harmless = _harmless(task)
    if turn is None or harmless is None:
        return None
    script = ground_truth_script(task.ground_truth)
    script[turn] = [[harmless], *script[turn]]
    return script


def skip_one_turn(task: ScriptedTask) -> Script | None:
    """No call at all in the second user turn whose ground truth has calls: the agent answers in text.

    Where the skipped calls only read what an earlier turn's calls already returned (a watchlist
    read right after the call that changed it returns the same list), the state and the outputs
    so far still match the ground truth's: only a check that the turn made calls tells.
    """
    with_calls = [i for i, turn in enumerate(task.ground_truth) if turn]
    if len(with_calls) < 2:
        return None
    script = ground_truth_script(task.ground_truth)
    script[with_calls[1]] = []
    return script


def _trailing_comma(call: Call) -> SentCall:
    text = json.dumps(call.arguments)
    return SentCall(call.name, text[:-1] + ",}")


def trailing_comma(task: ScriptedTask) -> Script | None:
    """The first call that has arguments sends them with a trailing comma (not JSON; capplan's parser repairs it)."""
    for index, turn in enumerate(task.ground_truth):
        for position, call in enumerate(turn):
            if call.arguments:
                script = ground_truth_script(task.ground_truth)
                step: list[Call | SentCall] = list(turn)
                step[position] = _trailing_comma(call)
                script[index] = [step]
                return script
    return None


def _harmless(task: ScriptedTask) -> Call | None:
    return next((HARMLESS[c] for c in HARMLESS if HARMLESS[c].name in task.tools), None)


def _last_turn_steps(task: ScriptedTask, reads: int) -> Script | None:
    last = len(task.ground_truth) - 1
    harmless = _harmless(task)
    if harmless is None or not task.ground_truth[last]:
        return None
    script = ground_truth_script(task.ground_truth)
    script[last] = [*([harmless] for _ in range(reads)), list(task.ground_truth[last])]
    return script


def past_step_limit(task: ScriptedTask) -> Script | None:
    """In the last user turn, 20 read-only steps and then the turn's calls: 21 tool-calling steps.

    BFCL force-quits the turn after its 21st step (``count > MAXIMUM_STEP_LIMIT``) and, this being
    the last turn, grades the entry as usual.
    """
    return _last_turn_steps(task, STEP_LIMIT)


def all_steps_then_answer(task: ScriptedTask) -> Script | None:
    """In the last user turn, 19 read-only steps, the turn's calls (the 20th step), then a text answer."""
    return _last_turn_steps(task, STEP_LIMIT - 1)


#: BFCL's MAXIMUM_STEP_LIMIT (the tasks' max_steps_per_turn)
STEP_LIMIT = 20

DEVIATIONS: dict[str, Callable[[ScriptedTask], Script | None]] = {
    "omit_one_call": omit_one,
    "change_one_argument": change_argument,
    "book_then_cancel": book_then_cancel,
    "extra_harmless_call": extra_harmless_call,
    "skip_one_turn": skip_one_turn,
    "trailing_comma": trailing_comma,
    "past_step_limit": past_step_limit,
    "all_steps_then_answer": all_steps_then_answer,
}


def with_script(tasks: list[ScriptedTask], deviation: str | None) -> list[ScriptedTask]:
    """The tasks under ``deviation`` (None: the ground truth); a task it does not apply to is left out."""
    out = []
    for task in tasks:
        script = ground_truth_script(task.ground_truth) if deviation is None else DEVIATIONS[deviation](task)
        if script is not None:
            out.append(ScriptedTask(task.entry_id, task.turns, task.tools, task.ground_truth, script))
    return out


if __name__ == "__main__":
    # ``python -m tests.trials.bfcl.scripted_agent CATEGORY [DELAY_S]``: serve the category's ground
    # truth until killed (for runs in another process); prints the base URL first
    import sys
    import time

    from tests.fake_provider import FakeProvider, on_body

    with FakeProvider(on_body(ScriptedAgent(load_tasks(sys.argv[1]))), delay_s=float(sys.argv[2]) if len(sys.argv) > 2 else 0.0) as srv:
        print(srv.base, flush=True)
        while True:
            time.sleep(3600)
