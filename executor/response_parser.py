"""A provider response becomes a GenerationResult.

Every policy that reads a response acts here: the reasoning codec extracts reasoning, the
response policy reshapes tool arguments (with ``param_types`` from the tools as sanitised), and
the assistant-text policy reshapes the reply. What cannot be interpreted is recorded beside the
data (ParserError, SchemaViolation) or raised as a typed error, never dropped.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from capplan.executor.cost import checked_cost
from capplan.executor.errors import ResponseShapeError
from capplan.executor.plan import Plan
from capplan.executor.policy_set import PolicySet
from capplan.executor.reasoning import ReasoningOrigin
from capplan.executor.request_builder import BuiltRequest, plan_origin
from capplan.executor.result import ArgumentRepair, GenerationResult, ParserError, SchemaViolation, ToolCall
from capplan.executor.tool_arguments import REPAIR_RUNGS, ArgumentsUndecodable, decode_arguments
from capplan.executor.tool_memo import PreparedTools
from capplan.executor.usage import UsageExtractor, extract_openrouter_generation_id


class ResponseParser:
    """Parses responses for one plan's policies."""

    def __init__(self, plan: Plan, policies: PolicySet) -> None:
        self.plan = plan
        self.policies = policies
        self.usage_extractor = UsageExtractor()
        self._origin = plan_origin(plan)

    def parse(
        self,
        response: Any,
        built: BuiltRequest,
        *,
        latency_s: float,
        synthetic: bool = False,
    ) -> GenerationResult:
        """Interpret ``response`` to the request ``built`` described.

        ``synthetic`` marks an offline mock response: its text bypasses the assistant-text
        policy, so offline fixtures do not depend on whichever preset a plan resolved to.
        """
        usage, usage_problems = self.usage_extractor.extract_checked(response)
        choices = _get(response, "choices") or []
        if not choices:
            raise ResponseShapeError(f"{self.plan.model.key}: response has no choices")
        choice = choices[0]
        message = _get(choice, "message")
        if message is None:
            raise ResponseShapeError(f"{self.plan.model.key}: response choice has no message")
        try:
            reasoning = self.policies.reasoning_codec.extract(message)
        except ValueError as exc:
            raise ResponseShapeError(f"{self.plan.model.key}: reasoning in the response cannot be read: {exc}") from exc
        if reasoning is not None:
            # recorded at extraction: a carrier in it verifies only where it was made
            reasoning = reasoning.with_origin(self._origin_of(response))
        text = _get(message, "content") or ""
        if not isinstance(text, str):
            raise ResponseShapeError(f"{self.plan.model.key}: message content is {type(text).__name__}, not text")
        if not synthetic:
            text = self.policies.assistant_text_policy.parse_assistant_text(text, model=self.plan.model)
        calls, parser_errors, violations, repairs = self._tool_calls(_get(message, "tool_calls") or [], built.tools)
        cost, source, cost_problems = checked_cost(response, usage, self.plan.pricing)
        return GenerationResult(
            text=text,
            tool_calls=tuple(calls),
            usage=usage,
            latency_s=latency_s,
            cost_usd=cost,
            cost_source=source,
            reasoning=reasoning,
            effective_system_prompt=built.effective_system_prompt,
            finish_reason=_get(choice, "finish_reason"),
            parser_errors=tuple(parser_errors),
            validation_errors=tuple(violations),
            openrouter_generation_id=extract_openrouter_generation_id(response),
            value_substitutions=built.value_substitutions,
            reasoning_left_out=built.reasoning_left_out,
            argument_repairs=tuple(repairs),
            response_problems=usage_problems + cost_problems,
            response_id=_response_id(response),
        )

    def _origin_of(self, response: Any) -> ReasoningOrigin:
        """The plan's origin, with the upstream a gateway says served ``response`` (OpenRouter's
        top-level ``provider``) when it names one."""
        upstream = _get(response, "provider")
        if isinstance(upstream, str) and upstream and upstream != self._origin.upstream:
            return dataclasses.replace(self._origin, upstream=upstream)
        return self._origin

    def _tool_calls(
        self, raw_calls: list[Any], tools: PreparedTools | None
    ) -> tuple[list[ToolCall], list[ParserError], list[SchemaViolation], list[ArgumentRepair]]:
        calls: list[ToolCall] = []
        errors: list[ParserError] = []
        violations: list[SchemaViolation] = []
        repairs: list[ArgumentRepair] = []
        for raw_call in raw_calls:
            function = _get(raw_call, "function")
            name = str(_get(function, "name") or "")
            call_id = str(_get(raw_call, "id") or "")
            raw = _get(function, "arguments")
            raw_text = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
            try:
                arguments, rung = decode_arguments(raw_text)
            except ArgumentsUndecodable as exc:
                errors.append(ParserError.from_raw(name, raw_text, str(exc)))
                arguments = {}
            else:
                if rung in REPAIR_RUNGS:
                    # executed as decoded, but what the model sent is kept: a truncated payload
                    # closed by the repair is a parser event, not a clean call
                    repairs.append(ArgumentRepair.from_raw(call_id, name, raw_text, rung))
                # {} stands in for undecodable text and is not the model's output, so only
                # decoded arguments are held to the schema
                violations.extend(_violations(call_id, name, arguments, tools))
            param_types = tools.param_types.get(name) if tools else None
            final = self.policies.response_policy.parse_arguments(arguments, param_types=param_types)
            calls.append(ToolCall(id=call_id, name=name, arguments=final, raw_arguments=raw_text))
        return calls, errors, violations, repairs


def _violations(call_id: str, name: str, arguments: dict[str, Any], tools: PreparedTools | None) -> list[SchemaViolation]:
    """The model's arguments checked against the sanitised schema it was shown for that tool.

    Checked before the response policy runs: the policy may reverse a sanitiser rewrite (an
    array back into a dict-map), after which the arguments no longer match what was shown.
    """
    validator = tools.validators.get(name) if tools else None
    if validator is None:
        return [SchemaViolation(call_id, name, "(root)", f"the model called {name!r}, which the request did not offer")]
    found = [
        SchemaViolation(call_id, name, "/".join(str(p) for p in err.absolute_path) or "(root)", err.message)
        for err in validator.iter_errors(arguments)
    ]
    return sorted(found, key=lambda v: (v.path, v.message))


def _response_id(response: Any) -> str | None:
    """The answer's own id, bounded: a hostile provider's id is a label, not a payload."""
    value = _get(response, "id")
    return value[:256] if isinstance(value, str) and value else None


def _get(obj: Any, name: str) -> Any:
    # litellm objects answer attribute access; the offline mock and recorded bodies are dicts
    if type(obj) is dict:  # the direct transport's answers: a plain dict, no ABC check needed
        return obj.get(name)
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)
