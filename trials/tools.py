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
        return _as_text(value), None

    def _invalid(self, call: ToolCall, coerced: bool, violations: tuple[SchemaViolation, ...]) -> list[str]:
        if coerced:
            # the parser never held {} to the schema: it stands in for text no parser accepted
            validator = self.prepared.validators.get(call.name)
            if validator is None:
                return []
            return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
                    for e in validator.iter_errors(call.arguments)]
        return [f"{v.path}: {v.message}" for v in violations if v.tool_call_id == call.id and v.tool_name == call.name]


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
