"""Running the agent's tool calls against the trial's environment.

A call never crashes the trial: an unknown tool, arguments that break the (sanitised) schema
the model was shown (``INVALID_ARGUMENTS``), and a method that raises (``Error: ...``) all
become tool results the agent can read and recover from. The recorder keeps each output
whole; the prompt copy goes through the truncation cap, error texts included.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from capplan.executor.result import SchemaViolation, ToolCall
from capplan.executor.tool_memo import PreparedTools
from capplan.trials.recording import Recorder, scrub
from capplan.trials.records import ToolCallRecord
from capplan.trials.truncation import effective_cap, keep_head_and_tail


class ToolRunner:
    """Executes calls for one trial's environment instance."""

    def __init__(
        self,
        instance: Any,
        *,
        prepared: PreparedTools,
        plan_cap: int | None,
        tool_caps: Mapping[str, int | None],
        recorder: Recorder,
    ) -> None:
        self.instance = instance
        self.prepared = prepared
        self.plan_cap = plan_cap
        self.tool_caps = tool_caps
        self.recorder = recorder

    def run(self, call: ToolCall, call_id: str, turn: int, coerced: bool,
            violations: tuple[SchemaViolation, ...]) -> str:
        """Execute one call; returns the content the model sees (capped)."""
        output, error = self._execute(call, coerced, violations)
        output = scrub(output, self.recorder.secrets)
        shown = keep_head_and_tail(output, effective_cap(self.plan_cap, self.tool_caps.get(call.name)))
        self.recorder.tool_calls.append(ToolCallRecord(
            id=call_id, provider_id=call.id, name=call.name, arguments=call.arguments, output=output,
            prompt_chars=len(shown), truncated=len(shown) != len(output) or shown != output, error=error, turn=turn,
        ))
        return shown

    def _execute(self, call: ToolCall, coerced: bool,
                 violations: tuple[SchemaViolation, ...]) -> tuple[str, Any]:
        if call.name not in self.tool_caps:
            return (f"Error: unknown tool {call.name!r}; available tools: {', '.join(self.tool_caps)}", "unknown_tool")
        problems = self._invalid(call, coerced, violations)
        if problems:
            return "INVALID_ARGUMENTS: " + "; ".join(problems), "invalid_arguments"
        method = getattr(self.instance, call.name)
        try:
            value = method(**call.arguments)
        except Exception as exc:  # the environment is task code; its failure is a result the agent reads
            return f"Error: {type(exc).__name__}: {exc}", "exception"
        return result_text(value), None

    def _invalid(self, call: ToolCall, coerced: bool, violations: tuple[SchemaViolation, ...]) -> list[str]:
        if coerced:
            # the parser never held {} to the schema: it stands in for text no parser accepted
            validator = self.prepared.validators.get(call.name)
            if validator is None:
                return []
            return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
                    for e in validator.iter_errors(call.arguments)]
        return [f"{v.path}: {v.message}" for v in violations if v.tool_call_id == call.id and v.tool_name == call.name]


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
