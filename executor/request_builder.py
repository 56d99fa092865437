"""A conversation becomes litellm kwargs, in the one order the spec fixes.

1. enrich the system prompt (the prompt policy sees the caller's original tools)
2. sanitise the tools (memoised on the tool list's digest)
3. cache ``apply`` on system + tools (after sanitising, so the sanitiser never sees markers)
4. convert messages: reasoning replay via the codec, empty-assistant filler, tool content format
   (each message once per conversation: a growing history reuses its earlier turns' wire form)
5. cache ``apply_messages`` on the wire-shape messages
6. params ``adapt`` (temperature, seed, reasoning routing)
7. ``param_value_rules``
8. transport (model string, endpoint, credentials, OpenRouter headers and pin)

Nothing here branches on a provider: every difference between models is a policy or plan field.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from executor.message_convert import ConversationCache, MessageConverter
from executor.messages import ChatRequest, NamedToolChoice
from executor.per_plan import per_plan
from executor.plan import Plan
from executor.policies.response_policy import param_types_from_tools
from executor.policy_set import PolicySet
from executor.reasoning import ReasoningLeftOut
from executor.tool_memo import PreparedTools, ToolMemo
from executor.transport import Transport
from executor.value_rules import Substitution, apply_value_rules


@dataclass(frozen=True)
class BuiltRequest:
    """The kwargs for one call plus what parsing its response needs."""

    kwargs: dict[str, Any]
    effective_system_prompt: str
    tools: PreparedTools | None
    value_substitutions: tuple[Substitution, ...]
    #: history reasoning the plan's codec does not replay (another family's, unsigned, opaque)
    reasoning_left_out: tuple[ReasoningLeftOut, ...] = ()


class RequestBuilder:
    """Builds requests for one plan; safe to share across threads."""

    def __init__(self, plan: Plan, policies: PolicySet, *, memo_size: int = 64) -> None:
        self.plan = plan
        self.policies = policies
        self.transport = per_plan(plan, "transport", Transport)
        sanitizer = policies.schema_sanitizer
        self.tool_memo = ToolMemo(
            sanitizer.sanitize, param_types_from_tools, size=memo_size, verbatim=not sanitizer.rewrites
        )
        self.converter = MessageConverter(policies, openrouter=self.transport.openrouter)
        self.conversations = ConversationCache(self.converter)
        # keyed by the prepared tools themselves (held, so their identity stays theirs)
        self._enriched: OrderedDict[tuple[PreparedTools | None, str], str] = OrderedDict()
        self._enriched_lock = threading.Lock()
        self._memo_size = memo_size

    def build(
        self,
        request: ChatRequest,
        *,
        env: Mapping[str, str] | None = None,
        api_base: str | None = None,
    ) -> BuiltRequest:
        """The exact kwargs litellm would receive for ``request`` (credentials resolved from ``env``)."""
        policies, defaults = self.policies, self.plan.request_defaults
        prepared = self.tool_memo.prepare_objects(request.tools, request.tools_json) if request.tools else None
        system = self._enrich(request.system or "", prepared)  # 1
        sanitized = prepared.shared() if prepared else None  # 2
        # messages are not converted yet, so ``apply`` marks system and tools only, as its contract says
        wire_system, wire_tools, _ = policies.cache_policy.apply(system or None, sanitized, [])  # 3
        wire_messages, left_out = self.conversations.wire(request.messages)  # 4
        if wire_system:
            wire_messages.insert(0, {"role": "system", "content": wire_system})
        wire_messages = policies.cache_policy.apply_messages(wire_messages)  # 5
        kwargs: dict[str, Any] = {"messages": wire_messages}
        if wire_tools:
            kwargs["tools"] = wire_tools
            if request.tool_choice is not None:
                kwargs["tool_choice"] = _tool_choice_wire(request.tool_choice)
            # meaningful only beside tools; null leaves the provider's default
            parallel = request.parallel_tool_calls
            if parallel is None:
                parallel = defaults.parallel_tool_calls
            if parallel is not None:
                kwargs["parallel_tool_calls"] = parallel
        top_p = request.top_p if request.top_p is not None else defaults.top_p
        if top_p is not None:
            kwargs["top_p"] = top_p
        max_tokens = request.max_tokens if request.max_tokens is not None else defaults.max_tokens
        if max_tokens is not None:
            kwargs["max_tokens"] = max_tokens
        kwargs = policies.params_policy.adapt(  # 6
            kwargs,
            defaults.temperature,
            defaults.seed,
            defaults.reasoning,
            request.temperature,
            request.seed,
            request.reasoning,
        )
        kwargs, substitutions = apply_value_rules(  # 7
            kwargs, self.plan.param_value_rules, has_tools=bool(wire_tools)
        )
        kwargs = self.transport.apply(kwargs, env=env, api_base=api_base)  # 8
        if left_out:
            _note_left_out(self.plan.model.key, left_out)
        return BuiltRequest(
            kwargs=kwargs,
            effective_system_prompt=system,
            tools=prepared,
            value_substitutions=substitutions,
            reasoning_left_out=left_out,
        )

    def _enrich(self, system: str, prepared: PreparedTools | None) -> str:
        # enrichment depends only on (system, tools), so it is memoised beside the sanitised tools
        key = (prepared, system)
        with self._enriched_lock:
            hit = self._enriched.get(key)
            if hit is not None:
                self._enriched.move_to_end(key)
                return hit
        enriched: str = self.policies.prompt_policy.enrich(system, prepared.declared_shared() if prepared else [])
        with self._enriched_lock:
            self._enriched[key] = enriched
            while len(self._enriched) > self._memo_size:
                self._enriched.popitem(last=False)
        return enriched


_LEFT_OUT_NOTED: set[tuple[str, str]] = set()
_LEFT_OUT_LOCK = threading.Lock()
_log = logging.getLogger("capplan.reasoning")


def _note_left_out(model: str, records: tuple[ReasoningLeftOut, ...]) -> None:
    # once per model and reason: a trial replays the same history every turn
    for record in records:
        key = (model, record.reason)
        with _LEFT_OUT_LOCK:
            if key in _LEFT_OUT_NOTED:
                continue
            _LEFT_OUT_NOTED.add(key)
        _log.warning("%s: history reasoning not replayed (%s block): %s; see the result's reasoning_left_out",
                     model, record.type, record.reason)


def _tool_choice_wire(choice: str | NamedToolChoice) -> str | dict[str, Any]:
    if isinstance(choice, NamedToolChoice):
        return choice.model_dump(mode="json")
    return choice
