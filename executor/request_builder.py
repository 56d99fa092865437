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
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from capplan.executor.message_convert import ConversationCache, MessageConverter
from capplan.executor.messages import ChatRequest, NamedToolChoice
from capplan.executor.per_plan import per_plan
from capplan.executor.plan import Plan
from capplan.executor.policies.response_policy import param_types_from_tools
from capplan.executor.policy_set import PolicySet
from capplan.executor.reasoning import ReasoningLeftOut
from capplan.executor.tool_memo import PreparedTools, ToolMemo
from capplan.executor.transport import Transport
from capplan.executor.value_rules import Substitution, apply_value_rules, note_substitution


@dataclass(frozen=True)
class BuiltRequest:
    """The kwargs for one call plus what parsing its response needs."""

    kwargs: dict[str, Any]
    effective_system_prompt: str
    tools: PreparedTools | None
    value_substitutions: tuple[Substitution, ...]
    #: history reasoning the plan's codec does not replay (another family's, unsigned, opaque)
    reasoning_left_out: tuple[ReasoningLeftOut, ...] = ()


_new = object.__new__


class _Head(NamedTuple):
    """Steps 1-3 for one (system prompt, tool list): they depend on nothing else."""

    system: str
    #: the wire system message, or None when there is no system prompt
    message: dict[str, Any] | None
    tools: list[dict[str, Any]] | None
    prepared: PreparedTools | None
    #: the request's tool objects, held so that the ids keying this head stay theirs
    specs: tuple[object, ...]


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
    prompt, tool list), and the parameter, value-rule and transport keys per set of request
    settings. A build converts the messages it has not seen, marks them, and assembles.
    """

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
        self._mark_messages = policies.cache_policy.apply_messages
        # both memos are read without their lock (a dict lookup is atomic) and written under it
        # the head memo is keyed by the ids of the request's tool objects (held by the head)
        self._heads: dict[tuple[tuple[int, ...], str], _Head] = {}
        self._heads_lock = threading.Lock()
        self._tails: dict[tuple[Any, ...], _Tail] = {}
        self._tails_lock = threading.Lock()
        self._memo_size = memo_size

    def build(
        self,
        request: ChatRequest,
        *,
        env: Mapping[str, str] | None = None,
        api_base: str | None = None,
    ) -> BuiltRequest:
        """The exact kwargs litellm would receive for ``request`` (credentials resolved from ``env``)."""
        # 1-3, once per system prompt and tool objects (validated specs are immutable by contract)
        system = request.system or ""
        tools = request.tools
        head = self._heads.get((tuple(map(id, tools)), system)) or self._make_head(request, system)
        prepared = head.prepared
        wire, left_out = self.conversations.wire(request.messages)  # 4
        kwargs: dict[str, Any] = {  # 5
            "messages": self._mark_messages([head.message, *wire] if head.message is not None else wire[:])
        }
        wire_tools = head.tools
        if wire_tools:
            kwargs["tools"] = wire_tools[:]
        # 6, 7, 8: computed once per distinct request settings (see _make_tail)
        parallel, top_p, max_tokens = request.parallel_tool_calls, request.top_p, request.max_tokens
        temperature, seed = request.temperature, request.seed
        try:
            if parallel is None and top_p is None and max_tokens is None and temperature is None and seed is None:
                # most requests set none of these: a shorter key, and no call per setting
                settings: tuple[Any, ...] | None = (bool(wire_tools), request.tool_choice, request.reasoning)
            else:
                settings = (
                    bool(wire_tools),
                    request.tool_choice,
                    request.reasoning,
                    _exact(parallel),
                    _exact(top_p),
                    _exact(max_tokens),
                    _exact(temperature),
                    _exact(seed),
                )
            tail = self._tails.get(settings)  # type: ignore[arg-type]
        except TypeError:  # an unhashable setting (a hand-made request): build it without the memo
            settings, tail = None, None
        remembered = tail is not None
        if tail is None:
            tail = self._make_tail(request, bool(wire_tools))
            if settings is not None:
                with self._tails_lock:
                    _remember(self._tails, settings, tail, self._memo_size)
        kwargs.update(tail.before)
        self.transport.credentials(kwargs, env, api_base)
        if tail.after:
            kwargs.update(tail.after)
        if remembered and tail.substitutions:
            # every call that substitutes a value says so, as the first one did while computing them
            for substitution in tail.substitutions:
                note_substitution(substitution)
        if left_out:
            _note_left_out(self.plan.model.key, left_out)
        # a frozen dataclass's __init__ sets each field through object.__setattr__; filling the
        # new instance's __dict__ makes the same object at a third of the cost
        built = _new(BuiltRequest)
        fields = built.__dict__
        fields["kwargs"] = kwargs
        fields["effective_system_prompt"] = head.system
        fields["tools"] = prepared
        fields["value_substitutions"] = tail.substitutions
        fields["reasoning_left_out"] = left_out
        return built

    def _make_head(self, request: ChatRequest, system: str) -> _Head:
        # enrichment and the system/tool markers depend only on (system, tools)
        tools = request.tools
        prepared = self.tool_memo.prepare_objects(tools, request.tools_json) if tools else None  # 2
        policies = self.policies
        enriched: str = policies.prompt_policy.enrich(system, prepared.declared_shared() if prepared else [])
        sanitized = prepared.shared() if prepared else None
        # messages are not converted yet, so ``apply`` marks system and tools only, as its contract says
        wire_system, wire_tools, _ = policies.cache_policy.apply(enriched or None, sanitized, [])
        message = {"role": "system", "content": wire_system} if wire_system else None
        made = _Head(enriched, message, wire_tools, prepared, tuple(tools))
        with self._heads_lock:
            _remember(self._heads, (tuple(map(id, made.specs)), system), made, self._memo_size)
        return made

    def _make_tail(self, request: ChatRequest, has_tools: bool) -> _Tail:
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
        kwargs, substitutions = apply_value_rules(kwargs, self.plan.param_value_rules, has_tools=has_tools)  # 7
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


def _remember(memo: dict[Any, Any], key: Any, value: Any, size: int) -> None:
    # oldest first out (dicts keep insertion order); the caller holds the memo's lock
    if key not in memo and len(memo) >= size:
        del memo[next(iter(memo))]
    memo[key] = value


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
