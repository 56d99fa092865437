"""The question set: the smallest request that answers each claim a plan makes about a parameter.

Every question is one small conversation (one short user turn, a 16-token output cap, one tiny
tool where the parameter only travels beside tools) built by the executor's real request
builder from the plan, with exactly one parameter changed: the one under test, whose
``param_value_rules`` entry is bypassed (see :class:`~capplan.executor.request_builder.UnderTest`).
A question's id is stable across runs and versions (``temperature=0``, ``tool_choice=required``),
because drift is found by comparing answers to the same id.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, get_args

from capplan.executor.cost_bound import OUTPUT_CAP_KEYS
from capplan.executor.messages import ChatRequest, NamedToolChoice
from capplan.executor.plan import Plan
from capplan.executor.reasoning import EffortLevel, ReasoningConfig
from capplan.executor.request_builder import UnderTest
from capplan.executor.value_rules import RULABLE_PARAMS, value_key
from capplan.executor.wire_dialect import is_responses
from capplan.probes import schema_features
from capplan.probes.evidence import Claim

#: the output cap of every probe request: OpenAI's smallest ``max_output_tokens`` is 16, and a
#: probe only needs the route's yes or no
PROBE_MAX_TOKENS = 16
PROMPT = "Reply with the single word OK."
#: the one tiny tool of the questions whose parameter travels only beside tools
TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "echo",
        "description": "Echo a word back.",
        "parameters": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]},
    },
}
STOP = "END"
#: the strict JSON schema of the ``response_format=json_schema_strict`` question
ANSWER_SCHEMA: dict[str, Any] = {
    "name": "answer",
    "strict": True,
    "schema": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"],
               "additionalProperties": False},
}


@dataclass(frozen=True)
class Question:
    """One thing to ask the route: a request that differs from the plan's own in one parameter."""

    #: stable id, ``param=value`` (``temperature=0``, ``tool_choice=named``, ``max_tokens=16``)
    id: str
    #: the parameter under test, by its chat name (``reasoning_effort``, ``seed``, ``stop``, ...)
    param: str
    #: the value, as ``param_value_rules`` keys it; None where no rule can hold it (a named tool
    #: choice, a seed, a stop sequence, a response format, the output cap)
    rule_key: str | None
    request: ChatRequest
    under_test: UnderTest
    #: the value the question expects on the wire, where it can be checked there (see ``sent_value``)
    expect: Any = None
    #: whether capplan's requests can carry this parameter at all (``stop`` and ``response_format``:
    #: no request field sets them, so the plan makes no claim about them)
    plan_can_send: bool = True
    notes: tuple[str, ...] = field(default=())
    #: why the question is not asked on this plan's route at all (a protocol with no such thing)
    skip: str | None = None
    #: a change made to the built kwargs before sending (the output cap under the name the plan
    #: does not send, which no request field can ask for); None: sent as built
    rewrite: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    #: why the wire body does not carry what the question asks (None: it does); replaces the
    #: ``sent_value`` check for questions that are not one parameter's value
    on_wire: Callable[[Mapping[str, Any]], str | None] | None = None
    #: the plan's claim, where it follows from the plan rather than from building its own request
    claim: Claim | None = None


def _request(fields: Mapping[str, Any] | None = None, *, tools: bool = False,
             tool: Mapping[str, Any] | None = None) -> ChatRequest:
    body: dict[str, Any] = {"messages": [{"role": "user", "content": PROMPT}], "max_tokens": PROBE_MAX_TOKENS}
    if tools or tool is not None:
        body["tools"] = [tool if tool is not None else TOOL]
    body.update(fields or {})  # the one setting a question changes
    return ChatRequest.model_validate(body)


def _number_id(value: float) -> str:
    return f"{value:g}"


def question_set(plan: Plan) -> list[Question]:
    """Every question for ``plan``, in a fixed order: the output cap first (it doubles as the baseline).

    Covers ``temperature`` 0 and every ``temperature`` / ``top_p`` value the plan's rules name,
    each reasoning effort, ``tool_choice`` none / auto / required / named, ``parallel_tool_calls``
    true / false, ``seed``, ``stop`` and ``response_format`` text / json_object / strict
    json_schema. Which of them a route can be asked is decided when each is built
    (:func:`capplan.probes.runner.plan_probe`), where a protocol that cannot express one says why.
    """
    questions = [Question(f"max_tokens={PROBE_MAX_TOKENS}", "max_tokens", None, _request(), UnderTest(),
                          expect=PROBE_MAX_TOKENS)]
    rules = plan.param_value_rules
    for param in ("temperature", "top_p"):
        values = {value_key(param, 0.0)} if param == "temperature" else set()
        values |= set(rules.get(param, {}))
        for key in sorted(values, key=float):
            number = float(key)
            questions.append(Question(
                f"{param}={_number_id(number)}", param, key, _request({param: number}),
                UnderTest(frozenset({param}), {param: number}), expect=number))
    for level in get_args(EffortLevel):
        questions.append(Question(
            f"reasoning_effort={level}", "reasoning_effort", level,
            _request({"reasoning": ReasoningConfig(mode="adaptive", effort_hint=level)}),
            UnderTest(frozenset({"reasoning_effort"})), expect=level))
    for choice in ("none", "auto", "required"):
        questions.append(Question(f"tool_choice={choice}", "tool_choice", choice, _request({"tool_choice": choice}, tools=True),
                                  UnderTest(frozenset({"tool_choice"})), expect=choice))
    named = NamedToolChoice.model_validate({"type": "function", "function": {"name": "echo"}})
    questions.append(Question("tool_choice=named", "tool_choice", None, _request({"tool_choice": named}, tools=True),
                              UnderTest(frozenset({"tool_choice"})), notes=(
                                  "a named tool_choice is not a value param_value_rules can key",)))
    for flag in (True, False):
        key = value_key("parallel_tool_calls", flag)
        questions.append(Question(f"parallel_tool_calls={key}", "parallel_tool_calls", key,
                                  _request({"parallel_tool_calls": flag}, tools=True),
                                  UnderTest(frozenset({"parallel_tool_calls"})), expect=flag))
    questions.append(Question("seed=1", "seed", None, _request({"seed": 1}), UnderTest(forced={"seed": 1}), expect=1))
    questions.append(Question(f"stop={STOP}", "stop", None, _request(), UnderTest(forced={"stop": [STOP]}),
                              expect=[STOP], plan_can_send=False))
    formats: dict[str, dict[str, Any]] = {
        "text": {"type": "text"},
        "json_object": {"type": "json_object"},
        "json_schema_strict": {"type": "json_schema", "json_schema": ANSWER_SCHEMA},
    }
    for name, value in formats.items():
        questions.append(Question(f"response_format={name}", "response_format", None, _request(),
                                  UnderTest(forced={"response_format": value}), expect=value, plan_can_send=False))
    questions.append(output_cap_question(plan))
    questions += tool_schema_questions(plan)
    return questions


#: the parameter of the output-cap question: which name the route takes the cap under
CAP_NAME = "output_cap_name"


def output_cap_question(plan: Plan) -> Question:
    """The output cap under the name the plan does *not* send.

    A plan whose route renames ``max_tokens`` to ``max_completion_tokens`` (litellm's rule for
    OpenAI's reasoning models, kept in ``wire.renames``) is asked whether the route takes
    ``max_tokens``; every other chat plan whether it takes ``max_completion_tokens``. No request
    field can name the cap otherwise, so the built kwargs are changed: the cap moves into
    ``extra_body``, which both transports copy into the body as it is, past the rename.

    The plan's claim is only that its own name works (the baseline question asks that): it never
    sends the other name, so the answer is recorded, not compared. Where the baseline is refused,
    ``--check`` says whether the route took the cap under the other name.
    """
    wire = plan.wire
    renamed = wire.renames.get("max_tokens") if wire is not None else None
    other = "max_tokens" if renamed == "max_completion_tokens" else "max_completion_tokens"
    request = _request()
    if wire is not None and is_responses(wire.protocol):
        return Question(f"{CAP_NAME}=max_tokens", CAP_NAME, None, request, UnderTest(), plan_can_send=False,
                        skip=("the Responses API has only max_output_tokens: there is no other name to ask about "
                              "(capplan sends max_tokens and max_completion_tokens as max_output_tokens)"))
    sends = renamed or "max_tokens"
    claim = Claim("none", f"the plan sends the cap as {sends} and never as {other}" + (
        " (it renames max_tokens, as litellm does for OpenAI reasoning models)" if renamed else ""))

    def rewrite(kwargs: dict[str, Any]) -> dict[str, Any]:
        out = {key: value for key, value in kwargs.items() if key not in OUTPUT_CAP_KEYS}
        extra = kwargs.get("extra_body")
        out["extra_body"] = {**(extra if isinstance(extra, Mapping) else {}), other: PROBE_MAX_TOKENS}
        return out

    def on_wire(body: Mapping[str, Any]) -> str | None:
        names = [name for name in OUTPUT_CAP_KEYS if name in body]
        if names == [other] and body[other] == PROBE_MAX_TOKENS:
            return None
        return f"the request carries the cap as {', '.join(names) or 'nothing'}, not as {other} alone"

    return Question(f"{CAP_NAME}={other}", CAP_NAME, None, request, UnderTest(), expect=PROBE_MAX_TOKENS,
                    plan_can_send=False, rewrite=rewrite, on_wire=on_wire, claim=claim)


def tool_schema_questions(plan: Plan) -> list[Question]:
    """One question per JSON-Schema feature, plain and inside a strict tool (see :mod:`.schema_features`)."""
    sanitizer = plan.policies["schema_sanitizer"].name if "schema_sanitizer" in plan.policies else "passthrough"
    out: list[Question] = []
    for qid in schema_features.feature_ids():
        name = qid.partition("=")[2]
        strict = name.startswith("strict")
        feature = name.removeprefix("strict").removeprefix("+")
        notes = (schema_features.REMEDY.get(feature, schema_features.NO_REMEDY),)
        out.append(Question(
            qid, schema_features.PARAM, None, _request(tool=schema_features.tool(feature, strict=strict)), UnderTest(),
            notes=notes, on_wire=schema_features.missing_on_wire(feature, strict=strict, sanitizer=sanitizer),
            claim=Claim("accepted", f"the plan's schema sanitiser ({sanitizer}) keeps it: trials send it as asked here")))
    return out


def sent_value(kwargs: Mapping[str, Any], param: str) -> Any:
    """The value ``param`` goes out with in built ``kwargs`` (chat or Responses shaped), or None.

    Each parameter is looked for at every site the builder puts it: ``reasoning_effort`` at the
    top level, in ``reasoning.effort`` (Responses) and in ``extra_body.reasoning.effort``
    (OpenRouter); the output cap under any of its three names.
    """
    if param == "reasoning_effort":
        for holder in (kwargs, _mapping(kwargs.get("extra_body"))):
            if "reasoning_effort" in holder:
                return holder["reasoning_effort"]
            reasoning = _mapping(holder.get("reasoning"))
            if "effort" in reasoning:
                return reasoning["effort"]
        return None
    if param == "max_tokens":
        for name in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
            if name in kwargs:
                return kwargs[name]
        return None
    return kwargs.get(param)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def rulable(param: str) -> bool:
    """Whether a refusal of ``param`` can become a ``param_value_rules`` entry."""
    return param in RULABLE_PARAMS
