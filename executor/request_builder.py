"""A conversation becomes litellm kwargs, in the one order the spec fixes.

1. enrich the system prompt (the prompt policy sees the caller's original tools)
2. sanitise the tools (``tool_memo`` decides what is remembered, and how)
3. cache ``apply`` on system + tools (after sanitising, so the sanitiser never sees markers)
4. convert messages: reasoning replay via the codec, empty-assistant filler, tool content format
   (each message once per conversation: a growing history reuses its earlier turns' wire form)
5. cache ``apply_messages`` on the wire-shape messages
6. params ``adapt`` (temperature, seed, reasoning routing)
7. ``param_value_rules``
8. transport (model string, endpoint, credentials, OpenRouter headers and pin)
9. on a Responses wire, the chat shape becomes the Responses request (``responses_request``)

Nothing here branches on a provider: every difference between models is a policy or plan field.
"""

from __future__ import annotations

import logging
import dataclasses
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from capplan.core.reference_mode import reference_mode
from capplan.executor.message_convert import ConversationCache, MessageConverter
from capplan.executor.errors import ReasoningError
from capplan.executor.messages import AssistantMessage, ChatRequest, Message, NamedToolChoice, ToolMessage, UserMessage
from capplan.executor.plan import Plan
from capplan.executor.plan_cache import per_plan
from capplan.executor.policies.response_policy import param_types_from_tools
from capplan.executor.policies.schema_sanitizer import rewrites
from capplan.executor.policies.reasoning_codec.base import LoopReasoningRule
from capplan.executor.policy_set import PolicySet
from capplan.executor.reasoning import ReasoningConfig, ReasoningLeftOut, ReasoningOrigin
from capplan.executor.tool_memo import BoundedMemo, PerToolObjects, PreparedTools, ToolMemo
from capplan.executor.transport import Transport
from capplan.executor.value_rules import Substitution, apply_value_rules, note_substitution
from capplan.executor.responses_request import InputItemMemo, responses_kwargs
from capplan.executor.wire_dialect import is_responses, protocol_of


def plan_origin(plan: Plan, upstream: str | None = None) -> ReasoningOrigin:
    """The origin of reasoning made through ``plan`` (``upstream``: the gateway's word, when it gave one).

    Without ``upstream`` it is where the plan's requests go: an OpenRouter plan pinned to one
    upstream without fallbacks names that upstream; otherwise which upstream serves a call is not
    known before it answers, and the origin names none.
    """
    protocol = plan.wire.protocol if plan.wire is not None else protocol_of(plan.model.provider)
    if upstream is None and plan.openrouter is not None and not plan.openrouter.allow_fallbacks \
            and len(plan.openrouter.provider_order) == 1:
        upstream = plan.openrouter.provider_order[0]
    return ReasoningOrigin(protocol, plan.binding.key or plan.model.provider, plan.model.wire_model, upstream)


#: why a request with reasoning off replays no history reasoning (see ReasoningCodec.thinks_unasked)
REASONING_OFF = ("reasoning is off for this request and this model thinks only when asked: history reasoning is "
                 "not replayed in a form the provider reads as thinking")


@dataclass(frozen=True)
class UnderTest:
    """One parameter a capability probe sends whatever the plan says about it (``capplan probe``).

    A probe asks the route whether it takes a value, so the plan's own answer must not stand in
    the way: the ``param_value_rules`` of the parameters in ``bypass`` are not consulted (a
    ``reject`` would stop the request before it is sent), and ``forced`` keys are set on the
    chat-shaped kwargs after step 7 (a params policy that never sends, say, ``temperature`` would
    otherwise leave nothing to ask about). Everything else is built exactly as a trial's request,
    and the transport step and the Responses mapping still apply to the forced keys.
    """

    bypass: frozenset[str] = frozenset()
    forced: Mapping[str, Any] = dataclasses.field(default_factory=dict)


@dataclass(frozen=True)
class BuiltRequest:
    """The kwargs for one call plus what parsing its response needs."""

    kwargs: dict[str, Any]
    effective_system_prompt: str
    tools: PreparedTools | None
    value_substitutions: tuple[Substitution, ...]
    #: history reasoning the plan's codec does not replay (another family's, unsigned, opaque)
    reasoning_left_out: tuple[ReasoningLeftOut, ...] = ()


def built_request_unchecked(
    kwargs: dict[str, Any],
    effective_system_prompt: str,
    tools: PreparedTools | None,
    value_substitutions: tuple[Substitution, ...],
    reasoning_left_out: tuple[ReasoningLeftOut, ...],
) -> BuiltRequest:
    """``BuiltRequest(...)`` without the dataclass's generated ``__init__``, for the build hot path.

    Why: a frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``;
    filling the new instance's ``__dict__`` makes the same object in a third of the time
    (about 0.2 against 0.6 µs, a tenth of a ~4 µs build; ``benchmarks/executor_build.py``).
    Nothing is validated either way. Every field is set here, in step with ``BuiltRequest``'s
    (a test compares the two constructions). Seam *object.__new__*: the reference mode
    (:mod:`capplan.core.reference_mode`) calls the constructor.
    """
    if reference_mode():
        return BuiltRequest(kwargs, effective_system_prompt, tools, value_substitutions, reasoning_left_out)
    built = object.__new__(BuiltRequest)
    fields = built.__dict__
    fields["kwargs"] = kwargs
    fields["effective_system_prompt"] = effective_system_prompt
    fields["tools"] = tools
    fields["value_substitutions"] = value_substitutions
    fields["reasoning_left_out"] = reasoning_left_out
    return built


class _Head(NamedTuple):
    """Steps 1-3 for one (system prompt, tool list): they depend on nothing else."""

    system: str
    #: the wire system message, or None when there is no system prompt
    message: dict[str, Any] | None
    tools: list[dict[str, Any]] | None
    prepared: PreparedTools | None


class _Tail(NamedTuple):
    """Steps 6-8 for one set of request settings, credentials aside (read on every build).

    ``before`` holds the keys that precede the credentials in the kwargs, ``after`` those that
    follow them. Every build copies both into its own kwargs dict, shallowly: the nested values
    (``thinking``, ``extra_body``, ``extra_headers``, ...) are the memo's and shared by every
    build of these settings, read-only like the shared tool and message dicts.
    """

    before: dict[str, Any]
    after: dict[str, Any]
    substitutions: tuple[Substitution, ...]


class RequestBuilder:
    """Builds requests for one plan; safe to share across threads.

    Everything a build does that depends on neither the messages nor the credentials is done
    once and remembered: the enriched and cache-marked system prompt and tools per (system
    prompt, tool objects), and the parameter, value-rule and transport keys per set of request
    settings. A build converts the messages it has not seen, marks them, and assembles.
    """

    def __init__(self, plan: Plan, policies: PolicySet, *, memo_size: int = 64) -> None:
        self.plan = plan
        self.policies = policies
        self.transport = per_plan(plan, "transport", Transport)
        sanitizer = policies.schema_sanitizer
        self.tool_memo = ToolMemo(
            sanitizer.sanitize, param_types_from_tools, size=memo_size, verbatim=not rewrites(sanitizer)
        )
        self.origin = plan_origin(plan)
        self.converter = MessageConverter(policies, openrouter=self.transport.openrouter, origin=self.origin)
        self.conversations = ConversationCache(self.converter)
        self._thinks_unasked = policies.reasoning_codec.thinks_unasked
        self._loop_rule = policies.reasoning_codec.loop_needs_own_reasoning(openrouter=self.transport.openrouter)
        self._mark_messages = policies.cache_policy.apply_messages
        wire_route = plan.wire
        #: the plan's Responses body fields, when its wire is a Responses API (step 9)
        self._responses_body = wire_route.body if wire_route is not None and is_responses(wire_route.protocol) else None
        #: each wire message's Responses input items, converted once per message dict (step 9)
        self._responses_items = InputItemMemo()
        self._heads: PerToolObjects[_Head] = PerToolObjects(memo_size)
        self._tails: BoundedMemo[tuple[Any, ...], _Tail] = BoundedMemo(memo_size)

    def build(
        self,
        request: ChatRequest,
        *,
        env: Mapping[str, str] | None = None,
        api_base: str | None = None,
        under_test: UnderTest | None = None,
    ) -> BuiltRequest:
        """The exact kwargs litellm would receive for ``request`` (credentials resolved from ``env``).

        ``under_test`` is the probe's seam (see :class:`UnderTest`); such a build is never remembered.
        """
        system = request.system or ""
        # 1-3: the system prompt and tools, sanitised, enriched and cache-marked
        head = self._heads.get_made(request.tools, system) or self._make_head(request, system)
        wire, left_out = self.conversations.wire(request.messages)  # 4
        if not self._thinks_unasked and self.reasoning_off(request):
            wire, left_out = self._without_reasoning(request.messages, wire, left_out)
        if left_out:
            wire = _without_call_signatures(request.messages, wire, left_out)
            if self._loop_rule is not None and not self.reasoning_off(request):
                _refuse_foreign_loop(request.messages, left_out, self._loop_rule)
        messages = [head.message, *wire] if head.message is not None else wire[:]
        kwargs: dict[str, Any] = {"messages": self._mark_messages(messages)}  # 5
        if head.tools:
            kwargs["tools"] = head.tools[:]
        if under_test is None:
            tail = self._tail(request, bool(head.tools))  # 6, 7 and 8 but the credentials
        else:
            tail = self._make_tail(request, bool(head.tools), under_test)
        kwargs.update(tail.before)
        self.transport.credentials(kwargs, env, api_base)  # 8: read on every build
        kwargs.update(tail.after)
        if left_out:
            _note_left_out(self.plan.model.key, left_out)
        if self._responses_body is not None:
            kwargs = responses_kwargs(kwargs, self._responses_body, self._responses_items)  # 9
        return built_request_unchecked(kwargs, head.system, head.prepared, tail.substitutions, left_out)

    def reasoning_off(self, request: ChatRequest) -> bool:
        """Whether ``request`` turns reasoning off for a model that then does not think."""
        if self._thinks_unasked:
            return False
        active: ReasoningConfig = request.reasoning if request.reasoning is not None else self.plan.request_defaults.reasoning
        return active.mode == "off"

    def _without_reasoning(self, messages: list[Message], wire: list[dict[str, Any]],
                           left_out: tuple[ReasoningLeftOut, ...]) -> tuple[list[dict[str, Any]], tuple[ReasoningLeftOut, ...]]:
        """``wire`` with no history reasoning replayed, and every block recorded as left out.

        The cached conversion replays reasoning as the plan's codec does; a request with
        reasoning off takes its own copy of the turns that carry some (rare: a history of thinking
        turns sent on with thinking off), so the cache stays one per conversation.
        """
        converter = self.converter
        replaced: list[dict[str, Any]] | None = None
        for index, msg in enumerate(messages):
            if isinstance(msg, AssistantMessage) and msg.reasoning is not None:
                if replaced is None:
                    replaced = list(wire)
                replaced[index] = converter._assistant(msg, REASONING_OFF)
        if replaced is None:
            return wire, left_out
        return replaced, converter.left_out(messages, reasoning_off=REASONING_OFF)

    def _make_head(self, request: ChatRequest, system: str) -> _Head:
        tools = request.tools
        prepared = self.tool_memo.prepare_objects(tools, request.tools_json) if tools else None  # 2
        policies = self.policies
        # the prompt policy sees the caller's tools as declared, not as sanitised
        enriched: str = policies.prompt_policy.enrich(system, prepared.declared_shared() if prepared else [])  # 1
        sanitized = prepared.shared() if prepared else None
        # messages are not converted yet, so ``apply`` marks system and tools only, as its contract says
        wire_system, wire_tools, _ = policies.cache_policy.apply(enriched or None, sanitized, [])  # 3
        message = {"role": "system", "content": wire_system} if wire_system else None
        head = _Head(enriched, message, wire_tools, prepared)
        self._heads.put_made(tools, system, head)
        return head

    def _tail(self, request: ChatRequest, has_tools: bool) -> _Tail:
        settings = _settings(request, has_tools)
        tail = self._tails.get(settings)
        if tail is not None:
            # every call that substitutes a value says so, as the first one did while computing them
            for substitution in tail.substitutions:
                note_substitution(substitution)
            return tail
        tail = self._make_tail(request, has_tools)
        self._tails.put(settings, tail)
        return tail

    def _make_tail(self, request: ChatRequest, has_tools: bool, under_test: UnderTest | None = None) -> _Tail:
        policies, defaults = self.policies, self.plan.request_defaults
        kwargs: dict[str, Any] = {}
        if has_tools:
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
        rules = self.plan.param_value_rules
        if under_test is not None:
            rules = {param: by_value for param, by_value in rules.items() if param not in under_test.bypass}
        kwargs, substitutions = apply_value_rules(kwargs, rules, has_tools=has_tools)  # 7
        if under_test is not None:
            kwargs = {**kwargs, **under_test.forced}
        routed = self.transport.route(kwargs)  # 8, credentials aside
        split = len(routed)
        self.transport.extras(routed)
        items = list(routed.items())
        # the memo keeps its own copies: what the policies and the transport returned may be theirs
        return _Tail(
            {key: _fresh(value) for key, value in items[:split]},
            {key: _fresh(value) for key, value in items[split:]},
            substitutions,
        )


#: litellm's separator of a Gemini function call's thought signature inside the call's id
#: (``call_<uuid>__thought__<signature>``), which its Gemini route puts back on the part
THOUGHT_IN_CALL_ID = "__thought__"


def _without_call_signatures(messages: list[Message], wire: list[dict[str, Any]],
                             left_out: tuple[ReasoningLeftOut, ...]) -> list[dict[str, Any]]:
    """``wire`` with a left-out thought signature also taken out of the tool-call ids that carry it.

    litellm keeps a Gemini function call's own signature in the call's id, so leaving the
    message's signatures out is not enough: the id would carry one to a model or route it was not
    made for. The id loses its suffix, and so does every tool result answering it (the pair must
    still match); the shared cached dicts are copied, never changed.
    """
    dropped: dict[int, set[int]] = {}
    for record in left_out:
        if record.type == "signature":
            dropped.setdefault(record.message, set()).add(record.block)
    renamed: dict[str, str] = {}
    out: list[dict[str, Any]] | None = None
    for index, blocks in dropped.items():
        msg = messages[index]
        if not isinstance(msg, AssistantMessage) or msg.reasoning is None or not msg.tool_calls:
            continue
        signatures = {msg.reasoning.signatures[i] for i in blocks if i < len(msg.reasoning.signatures)}
        calls = []
        for call in wire[index].get("tool_calls") or []:
            head, separator, signature = str(call.get("id", "")).partition(THOUGHT_IN_CALL_ID)
            if separator and head and signature in signatures:
                renamed[call["id"]] = head
                call = {**call, "id": head}
            calls.append(call)
        if renamed:
            out = out if out is not None else list(wire)
            out[index] = {**wire[index], "tool_calls": calls}
    if out is None:
        return wire
    for index, message in enumerate(out):
        if message.get("role") == "tool" and message.get("tool_call_id") in renamed:
            out[index] = {**message, "tool_call_id": renamed[message["tool_call_id"]]}
    return out


def _settings(request: ChatRequest, has_tools: bool) -> tuple[Any, ...]:
    """Everything steps 6-8 read from a request: the key their result is remembered by."""
    parallel, top_p, max_tokens = request.parallel_tool_calls, request.top_p, request.max_tokens
    temperature, seed = request.temperature, request.seed
    if parallel is None and top_p is None and max_tokens is None and temperature is None and seed is None:
        # most requests set none of these: a shorter key, and no call per setting
        return (has_tools, request.tool_choice, request.reasoning)
    return (
        has_tools,
        request.tool_choice,
        request.reasoning,
        _exact(parallel),
        _exact(top_p),
        _exact(max_tokens),
        _exact(temperature),
        _exact(seed),
    )


def _exact(value: Any) -> tuple[type, Any] | None:
    # 1 == 1.0 == True and 0.0 == -0.0 as dict keys, but each goes on the wire as itself
    if value is None:
        return None
    return (type(value), value.hex() if isinstance(value, float) else value)


def _fresh(value: Any) -> Any:
    """A copy of a JSON-shaped value down to its scalars."""
    if isinstance(value, dict):
        return {key: _fresh(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_fresh(item) for item in value]
    return value


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


#: what the reason of a record left out for a model or route switch says (see reasoning_codec.base)
_SWITCH = " switch: "


def _refuse_foreign_loop(messages: list[Message], left_out: tuple[ReasoningLeftOut, ...], rule: LoopReasoningRule) -> None:
    """Refuse a request whose tool loop lost a turn's reasoning to a switch the provider refuses.

    The turns are those the rule names (the one the request continues, or every tool-call turn
    since the last user message); switching at a user turn, or sending with reasoning off, is
    accepted, and the message says so.
    """
    turns = _loop_turns(messages)
    if rule.scope == "tail":
        turns = turns[-1:] if turns and all(isinstance(m, ToolMessage) for m in messages[turns[-1] + 1:]) else []
    for record in left_out:
        if record.message in turns and _SWITCH in record.reason:
            raise ReasoningError(
                f"messages[{record.message}]: this request continues a tool loop whose turn lost its reasoning "
                f"({record.reason}), and the provider refuses that step: {rule.refusal}; switch models or routes at "
                "a user turn, or send this request with reasoning off")


def _loop_turns(messages: list[Message]) -> list[int]:
    """The indices of the assistant tool-call turns since the last user message."""
    turns: list[int] = []
    for index in range(len(messages) - 1, -1, -1):
        msg = messages[index]
        if isinstance(msg, UserMessage):
            break
        if isinstance(msg, AssistantMessage) and msg.tool_calls:
            turns.append(index)
    return turns[::-1]
