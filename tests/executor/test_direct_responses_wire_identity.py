"""The direct transport sends what litellm's Responses bridge sends, and reads its answers alike.

Every golden conversation × every Responses plan (``openai-responses``, ``xai-responses``) × each
call variant (as built, ``max_tokens``, ``tool_choice: required`` and naming a function, parallel
tool calls off, and a history that replays Responses reasoning items with their encrypted content,
as the ``openai_responses`` codec extracts them) goes out on both
transports, the direct one (``POST {base}/responses``) and ``litellm.responses``, to one loopback
server that records method, path, headers and body and answers a valid Responses object.
Compared: method, path, the body as parsed JSON, and every header except those that describe the
sender (as in ``test_direct_wire_identity``); the same through a gateway, and for a plan compiled
with ``transport: litellm``. Whether a request conforms to the protocol is the Responses
emulator's subject (``capplan conformance``), not this module's.

Then the answers: the same recorded Responses answer (text, tool calls, reasoning items with
encrypted content, usage with cached and reasoning tokens, an ``incomplete`` answer, a refusal)
must give the same :class:`GenerationResult` on both transports, and the same failure (statuses,
a context-window refusal, a body cut short, a dropped connection, something that is not a
Responses object) must be classified and retried alike. Differences are the rows of
``docs/deviations.md`` this module names (:func:`documented`); each assertion on one fails when
litellm's side no longer does what it says. Headers included: the plan records litellm's Responses
``Accept`` (``*/*``, its own sender's on every provider), so nothing about them differs.
"""

from __future__ import annotations

import copy
import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from capplan.core.errors import UserError
from capplan.executor import golden_wire
from capplan.executor.attempts import attempts_of, error_class
from capplan.executor.client import Client, _litellm_responses
from capplan.executor.loop_errors import LoopErrorReason
from capplan.executor.messages import ChatRequest
from capplan.executor.plan import Plan
from capplan.executor.rate_limit import wire_status
from capplan.executor.wire_dialect import RESPONSES_PATH, is_responses
from tests.executor.log_level import capplan_logs_at
from tests.fake_provider import FakeProvider, Reply, Request, json_reply, serving_with_keys

ROOT = Path(__file__).resolve().parents[2]

KEYS = {"OPENAI_API_KEY": "sk-oa-rwire", "XAI_API_KEY": "sk-x-rwire", "OPENROUTER_API_KEY": "sk-or-rwire"}

#: headers that say who sent the request, not what it asks (as in test_direct_wire_identity)
SENDER_HEADERS = frozenset({"user-agent", "accept-encoding", "host", "content-length", "connection"})

#: the catalogue's Responses plans: a new one must join this comparison, never be skipped
CATALOGUE_RESPONSES = frozenset({"gpt-5", "o3", "grok-4.6"})



def _responses_plans() -> list[Plan]:
    plans = [Plan.load(path) for path in golden_wire.plan_files(ROOT)]
    return [p for p in plans if p.wire is not None and is_responses(p.wire.protocol)]


PLANS = _responses_plans()
CONVERSATIONS = golden_wire.conversations(ROOT)

#: a Responses answer as the API gives it: a reasoning item with its encrypted content, then the
#: function call it preceded, and usage with its token details
WIRE_ANSWER: dict[str, Any] = {
    "id": "resp_wire", "object": "response", "created_at": 1767225600, "status": "completed", "model": "m",
    "output": [
        {"type": "reasoning", "id": "rs_wire", "summary": [{"type": "summary_text", "text": "Think."}],
         "encrypted_content": "gAAAA-wire"},
        {"type": "message", "id": "msg_wire", "status": "completed", "role": "assistant",
         "content": [{"type": "output_text", "text": "ok", "annotations": []}]},
    ],
    "usage": {"input_tokens": 12, "output_tokens": 3, "total_tokens": 15,
              "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 1}},
}


#: the conversations the call variants are sent for (every conversation is sent as built)
VARIANT_CONVERSATIONS = ("dict_map_tools", "summary_replay")

#: an earlier turn of the same Responses route, as the openai_responses codec extracted it: two
#: reasoning items, one before the assistant's text and one before its function call
REPLAYED_TURN: list[dict[str, Any]] = [
    {"role": "assistant", "content": "Drafting the invoice.",
     "tool_calls": [{"id": "call_inv", "type": "function",
                     "function": {"name": "create_invoice", "arguments": json.dumps(
                         {"title": "Q3 consulting", "format": "pdf", "total": 301.0,
                          "lines": [{"key": "consulting", "qty": 2, "unit_price": 150.5}]})}}],
     "reasoning": {"blocks": [
         {"type": "encrypted", "text": "Say what I am doing.", "encrypted_data": "gAAAA-first",
          "extras": {"id": "rs_first", "summary": [{"type": "summary_text", "text": "Say what I am doing."}],
                     "follower": {"type": "message", "id": "msg_first"}}},
         {"type": "encrypted", "text": "", "encrypted_data": "gAAAA-second",
          "extras": {"id": "rs_second", "summary": [],
                     "follower": {"type": "function_call", "id": "fc_second", "call_id": "call_inv"}}},
     ], "summary": "Say what I am doing."}},
    {"role": "tool", "tool_call_id": "call_inv", "content": "{\"invoice\": \"INV-7\"}"},
]


def _with_replay(request: ChatRequest) -> ChatRequest:
    data = request.model_dump(mode="json", exclude_none=True)
    data["messages"] = [*data["messages"], *copy.deepcopy(REPLAYED_TURN)]
    return ChatRequest.model_validate(data)


def _variants(request: ChatRequest, name: str) -> dict[str, ChatRequest]:
    """The call variants: as built, with the settings a run or a task changes, and with replayed reasoning."""
    if name not in VARIANT_CONVERSATIONS:
        return {"as_built": request}
    out = {"as_built": request, "max_tokens": request.model_copy(update={"max_tokens": 333})}
    if request.tools:
        out["tool_choice_required"] = request.model_copy(update={"tool_choice": "required"})
        # a named function is the one tool_choice the Responses mapping reshapes ({type, name})
        out["tool_choice_named"] = ChatRequest.model_validate({
            **request.model_dump(mode="json", exclude_none=True),
            "tool_choice": {"type": "function", "function": {"name": request.tools[0].function.name}}})
        out["parallel_off"] = request.model_copy(update={"parallel_tool_calls": False})
        out["reasoning_replay"] = _with_replay(request)
    else:
        out["parallel_off"] = request
    return out


CASES = [
    pytest.param(plan, name, variant, id=f"{plan.model.key}-{name}-{variant}")
    for plan in PLANS for name, conversation in CONVERSATIONS.items() for variant in _variants(conversation, name)
]


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProvider]:
    with serving_with_keys(KEYS) as srv:  # litellm's own routes read os.environ
        yield srv


@pytest.fixture(scope="module")
def litellm_responses() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    return _litellm_responses()


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    # a seed or temperature a plan does not send, and every retry, is logged; not this module's subject
    with capplan_logs_at(logging.CRITICAL):
        yield


_CLIENTS: dict[tuple[str, str], tuple[Client, Client]] = {}


def _clients(plan: Plan, server: FakeProvider, completion: Any) -> tuple[Client, Client]:
    """(direct, via litellm.responses) for ``plan``, made once per plan: a client serves any number of calls."""
    key = (plan.model.key, server.base)
    if key not in _CLIENTS:
        _CLIENTS[key] = (Client(plan, env=dict(KEYS), api_base=server.base, sleep=lambda s: None),
                         Client(plan, env=dict(KEYS), api_base=server.base, completion=completion, sleep=lambda s: None))
    return _CLIENTS[key]


def _sent(server: FakeProvider, client: Client, request: ChatRequest) -> Request | BaseException:
    server.script(json_reply(WIRE_ANSWER))
    try:
        client.generate(request)
    except Exception as exc:  # noqa: BLE001 - a refusal is compared, not raised
        return exc
    assert len(server.requests) == 1, "one attempt, one request"
    return server.requests[0]


def _comparable(seen: Request) -> dict[str, Any]:
    headers = {k: v for k, v in seen.headers.items() if k not in SENDER_HEADERS and not k.startswith("x-stainless-")}
    return {"method": seen.method, "path": seen.path, "headers": headers, "body": seen.body}


def test_every_responses_plan_of_the_catalogue_is_compared() -> None:
    assert {p.model.key for p in PLANS} == CATALOGUE_RESPONSES
    assert {p.wire.protocol for p in PLANS if p.wire is not None} == {"openai-responses", "xai-responses"}
    assert all(p.wire is not None and p.wire.transport == "direct" for p in PLANS)


@pytest.mark.parametrize(("plan", "conversation", "variant"), CASES)
def test_direct_request_equals_litellms(server: FakeProvider, litellm_responses: Any, plan: Plan,
                                        conversation: str, variant: str) -> None:
    request = _variants(CONVERSATIONS[conversation], conversation)[variant]
    direct, via_litellm = _clients(plan, server, litellm_responses)
    assert direct.direct is not None and via_litellm.direct is None
    try:
        direct.build(request)
    except UserError:
        return  # the plan refuses the conversation while building: nothing goes out on either transport
    theirs = _sent(server, via_litellm, request)
    ours = _sent(server, direct, request)
    assert isinstance(ours, Request), f"direct transport failed: {ours!r}"
    assert isinstance(theirs, Request), f"litellm failed where no deviation is documented: {theirs!r}"
    assert ours.path.endswith(RESPONSES_PATH) and theirs.path.endswith(RESPONSES_PATH)
    mine, litellms = _comparable(ours), _comparable(theirs)
    assert mine == litellms


def test_the_replayed_reasoning_items_go_out_before_their_followers(server: FakeProvider,
                                                                    litellm_responses: Any) -> None:
    # the reasoning_replay variant must reach the wire as reasoning items, or it compares nothing new
    plan = next(p for p in PLANS if p.model.key == "gpt-5")
    direct, _ = _clients(plan, server, litellm_responses)
    seen = _sent(server, direct, _variants(CONVERSATIONS["dict_map_tools"], "dict_map_tools")["reasoning_replay"])
    assert isinstance(seen, Request), seen
    items = [(item["type"], item.get("id")) for item in seen.body["input"]]
    assert items[1:] == [("reasoning", "rs_first"), ("message", "msg_first"), ("reasoning", "rs_second"),
                         ("function_call", "fc_second"), ("function_call_output", None)]
    assert [item.get("encrypted_content") for item in seen.body["input"] if item["type"] == "reasoning"] == [
        "gAAAA-first", "gAAAA-second"]


# --- the answers: the same recorded Responses answer gives the same result on both transports ---

CONVERSATION = CONVERSATIONS["dict_map_tools"]

USAGE = {"input_tokens": 1200, "output_tokens": 80, "total_tokens": 1280,
         "input_tokens_details": {"cached_tokens": 1000}, "output_tokens_details": {"reasoning_tokens": 30}}
#: arguments valid for the conversation's sanitised tool (a dict-map sent as an array of keyed entries)
ARGUMENTS = json.dumps({"title": "Q3 consulting", "format": "pdf", "total": 301.0,
                        "lines": [{"key": "consulting", "qty": 2, "unit_price": 150.5}]})


def _reasoning(item_id: str, text: str | None, payload: str = "gAAAA-payload") -> dict[str, Any]:
    summary = [{"type": "summary_text", "text": text}] if text else []
    return {"type": "reasoning", "id": item_id, "summary": summary, "encrypted_content": payload}


def _message(text: str, item_id: str = "msg_1") -> dict[str, Any]:
    return {"type": "message", "id": item_id, "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def _call(call_id: str, arguments: str, name: str = "create_invoice", item_id: str = "fc_1") -> dict[str, Any]:
    return {"type": "function_call", "id": item_id, "call_id": call_id, "name": name, "arguments": arguments,
            "status": "completed"}


def _response(output: list[dict[str, Any]], *, status: str = "completed", usage: dict[str, Any] | None = USAGE,
              incomplete: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"id": "resp_1", "object": "response", "created_at": 1767225600, "status": status,
                            "model": "gpt-5-2025-08-07", "output": output, "parallel_tool_calls": True,
                            "tool_choice": "auto", "tools": [], "error": None,
                            "incomplete_details": {"reason": incomplete} if incomplete else None}
    if usage is not None:
        body["usage"] = usage
    return body


SUCCESSES: dict[str, dict[str, Any]] = {
    "text": _response([_reasoning("rs_1", "Plan the invoice."), _message("Invoice drafted.")]),
    "tool_call": _response([_reasoning("rs_1", "Call the tool."), _call("call_1", ARGUMENTS)]),
    "two_tool_calls_two_reasonings": _response([
        _reasoning("rs_1", "First."), _call("call_1", ARGUMENTS, item_id="fc_1"),
        _reasoning("rs_2", None, "gAAAA-second"), _call("call_2", ARGUMENTS, item_id="fc_2")]),
    "text_and_tool_call": _response([_message("Drafting."), _reasoning("rs_1", "Now call."), _call("call_1", ARGUMENTS)]),
    "tool_call_truncated_arguments": _response([_call("call_1", '{"customer": "ACME", "format": "pd')],
                                               status="incomplete", incomplete="max_output_tokens"),
    "tool_call_unknown_tool": _response([_call("call_1", "{}", name="delete_everything")]),
    "incomplete_max_output_tokens": _response([_reasoning("rs_1", "Long thought."), _message("Invoice dra")],
                                              status="incomplete", incomplete="max_output_tokens"),
    "incomplete_only_reasoning": _response([_reasoning("rs_1", None)], status="incomplete",
                                           incomplete="max_output_tokens"),
    "incomplete_content_filter": _response([_message("")], status="incomplete", incomplete="content_filter"),
    "refusal": _response([{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
                           "content": [{"type": "refusal", "refusal": "I can't help with that."}]}]),
    "no_usage": _response([_message("Hi.")], usage=None),
    "usage_without_details": _response([_message("Hi.")], usage={"input_tokens": 10, "output_tokens": 2,
                                                                 "total_tokens": 12}),
}


def _result_fields(result: Any) -> dict[str, Any]:
    usage = result.usage
    return {
        "text": result.text,
        "tool_calls": [(c.id, c.name, c.arguments, c.raw_arguments) for c in result.tool_calls],
        "reasoning": result.reasoning,
        "reasoning_origins": [b.origin for b in result.reasoning.blocks] if result.reasoning else None,
        "usage": (usage.prompt_tokens, usage.completion_tokens, usage.reasoning_tokens, usage.cached_tokens,
                  usage.cache_creation_input_tokens, usage.cache_read_input_tokens),
        "finish_reason": result.finish_reason, "parser_errors": result.parser_errors,
        "validation_errors": result.validation_errors, "argument_repairs": result.argument_repairs,
        "value_substitutions": result.value_substitutions, "reasoning_left_out": result.reasoning_left_out,
        "effective_system_prompt": result.effective_system_prompt, "response_problems": result.response_problems,
        "attempts": [(a.status, a.error_class) for a in result.attempts],
        "cost": (result.cost_usd, result.cost_source),
    }


def _outcome(client: Client, server: FakeProvider, *answers: Reply) -> Any:
    server.script(*answers)
    try:
        return client.generate(CONVERSATION)
    except Exception as exc:  # noqa: BLE001 - the failure is what is compared
        return exc


SUCCESS_CASES = [pytest.param(plan, name, id=f"{plan.model.key}-{name}") for plan in PLANS for name in SUCCESSES]


@pytest.mark.parametrize(("plan", "answer"), SUCCESS_CASES)
def test_a_parsed_answer_equals_litellms(server: FakeProvider, litellm_responses: Any, plan: Plan,
                                         answer: str) -> None:
    direct, via_litellm = _clients(plan, server, litellm_responses)
    theirs = _outcome(via_litellm, server, json_reply(SUCCESSES[answer]))
    ours = _outcome(direct, server, json_reply(SUCCESSES[answer]))
    assert not isinstance(theirs, BaseException), theirs
    assert not isinstance(ours, BaseException), ours
    assert _result_fields(ours) == _result_fields(theirs)


#: what the shared reading must make of some answers (equal on both transports by the test above), so that
#: two transports agreeing on a wrong reading still fails: (text, finish_reason, tool call ids, reasoning
#: item ids, (prompt, completion, reasoning, cached) tokens)
READ_AS: dict[str, tuple[str, str, list[str], list[str], tuple[int, int, int, int]]] = {
    "text": ("Invoice drafted.", "stop", [], ["rs_1"], (1200, 80, 30, 1000)),
    "two_tool_calls_two_reasonings": ("", "tool_calls", ["call_1", "call_2"], ["rs_1", "rs_2"], (1200, 80, 30, 1000)),
    "incomplete_max_output_tokens": ("Invoice dra", "length", [], ["rs_1"], (1200, 80, 30, 1000)),
    "incomplete_content_filter": ("", "content_filter", [], [], (1200, 80, 30, 1000)),
    "refusal": ("I can't help with that.", "stop", [], [], (1200, 80, 30, 1000)),
    "usage_without_details": ("Hi.", "stop", [], [], (10, 2, 0, 0)),
}


@pytest.mark.parametrize("answer", sorted(READ_AS))
def test_an_answer_is_read_as_the_responses_api_means_it(server: FakeProvider, litellm_responses: Any,
                                                         answer: str) -> None:
    plan = next(p for p in PLANS if p.model.key == "gpt-5")
    direct, _ = _clients(plan, server, litellm_responses)
    result = _outcome(direct, server, json_reply(SUCCESSES[answer]))
    assert not isinstance(result, BaseException), result
    text, finish, calls, items, tokens = READ_AS[answer]
    blocks = result.reasoning.blocks if result.reasoning else ()
    usage = result.usage
    assert (result.text, result.finish_reason, [c.id for c in result.tool_calls]) == (text, finish, calls)
    assert [dict(b.extras)["id"] for b in blocks] == items
    assert all(b.type == "encrypted" and b.encrypted_data and b.origin is not None
               and (b.origin.protocol, b.origin.model) == ("openai-responses", plan.model.model_id) for b in blocks)
    assert (usage.prompt_tokens, usage.completion_tokens, usage.reasoning_tokens, usage.cached_tokens) == tokens


# --- the failures: classified and retried alike ---

def _error(status: int, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error" if status == 400 else "server_error",
                      "param": None, "code": None, **extra}}


#: the Responses API's own wording of a context-window refusal
RESPONSES_CONTEXT = _error(400, "Your input exceeds the context window of this model. Please adjust your input and "
                                "try again.", param="input", code="context_length_exceeded")
#: the chat completions wording, which a proxy or an older deployment relays on the same route
CHAT_CONTEXT = _error(400, "This model's maximum context length is 400000 tokens. However, your messages resulted in "
                           "401234 tokens. Please reduce the length of the messages.", param="input",
                      code="context_length_exceeded")

#: failure name -> the answer each attempt gets (a retried failure repeats; five is the controllers' ceiling)
FAILURES: dict[str, Reply] = {
    "400": json_reply(_error(400, "Invalid value for 'reasoning.effort'", param="reasoning.effort"), 400),
    "401": json_reply(_error(401, "Incorrect API key provided", code="invalid_api_key"), 401),
    "404": json_reply(_error(404, "The model 'gpt-5' does not exist or you do not have access to it.",
                              code="model_not_found"), 404),
    "408": json_reply(_error(408, "Request timed out upstream"), 408),
    "429_retry_after": json_reply(_error(429, "Rate limit reached for requests", code="rate_limit_exceeded"), 429,
                                   {"Retry-After": "30"}),
    "500": json_reply(_error(500, "The server had an error while processing your request."), 500),
    "503": json_reply(_error(503, "The engine is currently overloaded, please try again later."), 503),
    "context_window": json_reply(RESPONSES_CONTEXT, 400),
    "context_window_chat_wording": json_reply(CHAT_CONTEXT, 400),
    "truncated_json": Reply(raw=b'{"id": "resp_1", "object": "response", "outp', status=200),
    "dropped_connection": Reply(drop=True),
    # something other than the provider answered: infrastructure, sent once on both transports
    "html_page_200": Reply(raw=b"<!DOCTYPE html><html><body>Sign in to the guest network</body></html>", status=200),
    "no_output_200": json_reply({"id": "resp_1", "object": "response", "created_at": 1767225600, "model": "m",
                                  "status": "completed"}),
    "chat_completion_200": json_reply({"id": "chatcmpl-1", "object": "chat.completion", "model": "m", "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}]}),
}


def _chain(exc: BaseException) -> Iterator[BaseException]:
    link: BaseException | None = exc
    while link is not None:
        yield link
        link = link.__cause__


def _verdict(client: Client, exc: BaseException) -> dict[str, Any]:
    decision = client.classify_loop_error(exc)
    return {
        "attempts": [(a.status, a.error_class) for a in attempts_of(exc)],
        "error_class": error_class(exc),
        "status": next((s for s in (wire_status(link) for link in _chain(exc)) if s is not None), None),
        "loop_reason": decision.reason, "excluded": decision.excluded,
    }


FAILURE_CASES = [pytest.param(plan, name, id=f"{plan.model.key}-{name}") for plan in PLANS for name in FAILURES]

API_ERROR, CONFIGURATION = LoopErrorReason.API_ERROR, LoopErrorReason.CONFIGURATION_ERROR


def documented(failure: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The rows of docs/deviations.md ("direct transport"): (litellm's verdict, the direct transport's), by field."""
    if failure == "dropped_connection":
        # T3: litellm reports httpx's connection error as an InternalServerError with status 500
        return ({"status": 500, "error_class": "server_error", "attempts": [("error", "server_error")] * 5},
                {"status": None, "error_class": "connection", "attempts": [("error", "connection")] * 5})
    if failure in ("html_page_200", "chat_completion_200"):
        # T7: litellm.responses reports a 200 body without ``created_at`` as an APIError quoting the body;
        # the direct transport names it as something other than the provider answering. Sent once by both
        return ({"error_class": "other", "loop_reason": API_ERROR, "excluded": False,
                 "attempts": [("error", "other")]},
                {"error_class": "infrastructure", "loop_reason": CONFIGURATION, "excluded": True,
                 "attempts": [("error", "infrastructure")]})
    return None


@pytest.mark.parametrize(("plan", "failure"), FAILURE_CASES)
def test_a_failure_is_classified_and_retried_as_litellms(server: FakeProvider, litellm_responses: Any, plan: Plan,
                                                         failure: str) -> None:
    direct, via_litellm = _clients(plan, server, litellm_responses)
    theirs = _outcome(via_litellm, server, *[FAILURES[failure]] * 5)
    their_requests = len(server.requests)
    ours = _outcome(direct, server, *[FAILURES[failure]] * 5)
    our_requests = len(server.requests)
    assert isinstance(theirs, BaseException) and isinstance(ours, BaseException), (theirs, ours)
    mine, litellms = _verdict(direct, ours), _verdict(via_litellm, theirs)
    row = documented(failure)
    if row is not None:
        their_fields, our_fields = row
        assert {k: litellms[k] for k in their_fields} == their_fields, "the documented litellm behaviour changed"
        assert {k: mine[k] for k in our_fields} == our_fields
        for name in set(their_fields) | set(our_fields):
            mine.pop(name, None)
            litellms.pop(name, None)
    assert mine == litellms
    assert our_requests == their_requests, "the same number of attempts reached the server"


@pytest.mark.parametrize("plan", PLANS, ids=[p.model.key for p in PLANS])
def test_retry_after_is_honoured_alike(server: FakeProvider, litellm_responses: Any, plan: Plan) -> None:
    waits: dict[str, list[float]] = {"direct": [], "litellm": []}
    direct = Client(plan, env=dict(KEYS), api_base=server.base, sleep=waits["direct"].append)
    via_litellm = Client(plan, env=dict(KEYS), api_base=server.base, completion=litellm_responses,
                         sleep=waits["litellm"].append)
    for client in (direct, via_litellm):
        result = _outcome(client, server, FAILURES["429_retry_after"], json_reply(SUCCESSES["text"]))
        assert not isinstance(result, BaseException), result
        assert result.text == "Invoice drafted."
        assert [(a.status, a.error_class) for a in result.attempts] == [("error", "rate_limit"), ("ok", None)]
    # the controllers' own first wait is 4 s; the provider asked for 30
    assert waits["direct"] == waits["litellm"] == [30.0]




@pytest.mark.parametrize("catalog", ["exact", "untranslated"])
@pytest.mark.parametrize("key", sorted(CATALOGUE_RESPONSES))
def test_through_a_gateway_direct_sends_what_litellm_sends(server: FakeProvider, litellm_responses: Any,
                                                           key: str, catalog: str) -> None:
    # a LiteLLM proxy serves /v1/responses: the route, key and headers the gateway gives apply alike
    from capplan.executor.gateway.catalog import clear_catalog_cache
    from capplan.executor.gateway.config import GatewayConfig

    plan = next(p for p in PLANS if p.model.key == key)
    clear_catalog_cache()
    server.catalog = [plan.model.model_id] if catalog == "exact" else []
    config = GatewayConfig(base_url=server.base, api_key="sk-gateway-rwire", headers={"X-Team-Token": "team-7"},
                           request_id_header="X-Request-Id", providers=frozenset({"openai", "xai"}))
    try:
        direct = Client(plan, env=dict(KEYS), gateway=config, sleep=lambda s: None)
        via_litellm = Client(plan, env=dict(KEYS), gateway=config, completion=litellm_responses, sleep=lambda s: None)
    finally:
        server.catalog = []
    assert direct.route is not None and direct.route.kind == catalog
    request = _variants(CONVERSATIONS["dict_map_tools"], "dict_map_tools")["reasoning_replay"]
    theirs, ours = _sent(server, via_litellm, request), _sent(server, direct, request)
    assert isinstance(theirs, Request) and isinstance(ours, Request), (theirs, ours)
    assert ours.path.endswith(RESPONSES_PATH)
    # the request id is a fresh UUID4 per request on either transport
    assert ours.headers.pop("x-request-id") != theirs.headers.pop("x-request-id")
    assert ours.headers["authorization"] == "Bearer sk-gateway-rwire"
    mine, litellms = _comparable(ours), _comparable(theirs)
    assert mine == litellms



@pytest.mark.parametrize("plan", PLANS, ids=[p.model.key for p in PLANS])
def test_a_plan_compiled_for_litellm_sends_through_the_bridge(server: FakeProvider, plan: Plan) -> None:
    # `transport: litellm` on a Responses plan: the client itself picks litellm.responses, and sends what the
    # direct transport sends (the comparison above passes the bridge in as the completion)
    assert plan.wire is not None
    on_litellm = Plan.seal({**plan.body(), "wire": {**plan.body()["wire"], "transport": "litellm"}})
    client = Client(on_litellm, env=dict(KEYS), api_base=server.base, sleep=lambda s: None)
    assert client.direct is None
    direct = Client(plan, env=dict(KEYS), api_base=server.base, sleep=lambda s: None)
    request = _variants(CONVERSATIONS["dict_map_tools"], "dict_map_tools")["reasoning_replay"]
    theirs, ours = _sent(server, client, request), _sent(server, direct, request)
    assert isinstance(theirs, Request) and isinstance(ours, Request), (theirs, ours)
    assert theirs.headers.get("user-agent", "").startswith("litellm/"), "litellm's sender made the request"
    mine, litellms = _comparable(ours), _comparable(theirs)
    assert mine == litellms
