"""Running the agent's tool calls against the trial's environment.

A call never crashes the trial: an unknown tool (or one not offered yet at this user turn),
arguments that break the (sanitised) schema the model was shown (``INVALID_ARGUMENTS``, when
the task enforces argument validation), a method that raises anything at all (``Error: ...``)
and a call that outlives its timeout (``Error: tool timed out after N s``) all become tool
results the agent can read and recover from. The method runs, and its return value becomes
text (:func:`result_text`), on the trial's task-code worker (:mod:`capplan.trials.tasks.task_code`),
so neither can raise into the loop or hang it. The recorder keeps each output whole; the
prompt copy goes through the truncation cap, error texts included.

Argument validation, per task: ``enforce`` refuses a call whose arguments break the schema;
``record`` runs it anyway and records the violations on the call's record
(``argument_violations``); ``off`` neither checks nor records.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Collection, Mapping
from typing import Any, Literal

from capplan.executor.result import SchemaViolation, ToolCall
from capplan.executor.tool_memo import PreparedTools
from capplan.trials.run_folder.recording import Recorder, scrub
from capplan.trials.run_folder.records import ToolCallRecord
from capplan.trials.tasks.task_code import (
    TaskCodeFailed,
    TaskCodeRunner,
    TaskCodeTimedOut,
    format_seconds,
)
from capplan.trials.loop.truncation import effective_cap, keep_head_and_tail

ArgumentValidation = Literal["enforce", "record", "off"]
#: The environment's implementation of a tool by name (None: no component has it).
MethodLookup = Callable[[str], Callable[..., Any] | None]


class ToolRunner:
    """Executes calls for one trial's environment."""

    def __init__(
        self,
        method: MethodLookup,
        *,
        prepared: PreparedTools,
        plan_cap: int | None,
        tool_caps: Mapping[str, int | None],
        recorder: Recorder,
        code: TaskCodeRunner,
        timeouts: Mapping[str, float],
        argument_validation: ArgumentValidation = "enforce",
    ) -> None:
        """``tool_caps`` and ``timeouts`` are keyed by every tool the task declares."""
        self.method = method
        self.prepared = prepared
        self.plan_cap = plan_cap
        self.tool_caps = tool_caps
        self.recorder = recorder
        self.code = code
        self.timeouts = timeouts
        self.argument_validation = argument_validation

    def run(self, call: ToolCall, call_id: str, turn: int, coerced: bool,
            violations: tuple[SchemaViolation, ...], offered: Collection[str] | None = None) -> str:
        """Execute one call; returns the content the model sees (capped).

        ``offered`` is the tools the request carried (default: every declared tool); a call of
        any other is an unknown tool. Raises :class:`TaskCodeCancelled` when the run is
        interrupted while the tool runs (the trial ends interrupted and reruns on resume).
        """
        offered = self.tool_caps if offered is None else offered
        output, error, problems = self._execute(call, call_id, coerced, violations, offered)
        output = scrub(output, self.recorder.secrets)
        shown = keep_head_and_tail(output, effective_cap(self.plan_cap, self.tool_caps.get(call.name)))
        self.recorder.tool_calls.append(ToolCallRecord(
            id=call_id, provider_id=call.id, name=call.name, arguments=call.arguments, output=output,
            prompt_chars=len(shown), truncated=len(shown) != len(output) or shown != output, error=error, turn=turn,
            argument_violations=[scrub(p, self.recorder.secrets) for p in problems] if problems else None,
        ))
        return shown

    def _execute(self, call: ToolCall, call_id: str, coerced: bool, violations: tuple[SchemaViolation, ...],
                 offered: Collection[str]) -> tuple[str, Any, list[str]]:
        """(output, error class, argument violations recorded under ``record``)."""
        method = self.method(call.name) if call.name in offered else None
        if method is None:
            return (f"Error: unknown tool {call.name!r}; available tools: {', '.join(t for t in self.tool_caps if t in offered)}",
                    "unknown_tool", [])
        problems = self._invalid(call, coerced, violations) if self.argument_validation != "off" else []
        if problems and self.argument_validation == "enforce":
            return "INVALID_ARGUMENTS: " + "; ".join(problems), "invalid_arguments", []
        try:
            text = self.code.call(tool_call_what(call.name, call_id), _call_as_text, method, call.arguments,
                                  timeout_s=self.timeouts[call.name])
        except TaskCodeFailed as exc:  # the environment is task code; its failure is a result the agent reads
            return (f"Error: {exc.kind}: {exc.message}" if exc.message else f"Error: {exc.kind}"), "exception", problems
        except TaskCodeTimedOut as exc:
            return f"Error: tool timed out after {format_seconds(exc.timeout_s)} s", "timeout", problems
        return text, None, problems

    def _invalid(self, call: ToolCall, coerced: bool, violations: tuple[SchemaViolation, ...]) -> list[str]:
        if coerced:
            # the parser never held {} to the schema: it stands in for text no parser accepted
            validator = self.prepared.validators.get(call.name)
            if validator is None:
                return []
            return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
                    for e in validator.iter_errors(call.arguments)]
        return [f"{v.path}: {v.message}" for v in violations if v.tool_call_id == call.id and v.tool_name == call.name]


def tool_call_what(name: str, call_id: str) -> str:
    """How a tool call is named on the task-code worker (and found again when the trial ends)."""
    return f"tool {name!r} (call {call_id})"


def _call_as_text(method: Callable[..., Any], arguments: dict[str, Any]) -> str:
    """Run on the task-code worker: the call and the text of its value (``str`` of a value is task code too)."""
    # a copy: task code may keep an argument and change it later (BFCL's mention() extends the
    # mentions list post_tweet stored), and the call's record must keep what the agent sent
    return result_text(method(**copy.deepcopy(arguments)))


def result_text(value: Any) -> str:
    """The text of a tool's return value, as the agent reads it and as expected outputs are written.

    A string is itself; anything else is JSON with sorted keys (objects JSON cannot hold are their
    ``str``). Values plain JSON refuses -- a dict whose keys mix types (``{1: ..., "a": ...}``
    cannot be sorted) or a structure that contains itself -- still get a text: keys are sorted by
    the text JSON gives them and a repeated container is written ``"<circular reference>"``, so a
    tool's result never ends the trial. For every value plain JSON accepts the text is exactly
    ``json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)``.
    """
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):  # mixed key types or a cycle: the explicit walk below handles both
        return json.dumps(_plain(value, set()), ensure_ascii=False, default=str)


_CIRCULAR = "<circular reference>"


def _json_key(key: Any) -> str:
    """The object key json.dumps writes for ``key`` (its own rules for str, int, float, bool, None)."""
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, (bool, int, float)):
        return json.dumps(key)
    return str(key)


def _plain(value: Any, active: set[int]) -> Any:
    """``value`` with dict keys made text and sorted, and containers inside themselves cut off."""
    if not isinstance(value, (dict, list, tuple)):
        return value
    if id(value) in active:
        return _CIRCULAR
    active.add(id(value))
    try:
        if isinstance(value, dict):
            pairs = sorted(((_json_key(k), k, v) for k, v in value.items()), key=lambda p: p[0])
            out: dict[str, Any] = {}
            for text, key, item in pairs:
                if text in out:  # 1 and "1" both present: the later one keeps its Python spelling
                    text = repr(key)
                out[text] = _plain(item, active)
            return out
        return [_plain(item, active) for item in value]
    finally:
        active.discard(id(value))
