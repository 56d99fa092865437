"""The direct transport reads a provider's answer as the litellm path does: results, errors, retries.

One loopback server answers both transports with the same recorded bodies: successes (text,
tool calls good and broken, each reasoning shape, usage and cache counters, a provider-reported
cost, OpenRouter's generation id) and failures (400, 401, 404, 408, 429 with ``Retry-After``, 500,
503, a context-window refusal in OpenAI's and in OpenRouter's shape, a body cut short, a dropped
connection). For a success the parsed results are compared field by field; for a failure, what
the executor decides from it: every attempt's status and error class, the final error's class,
HTTP status and the trial loop's verdict. Differences that are documented in
``docs/deviations.md`` are named here (cost priced by litellm's own map; the raw usage block).
"""

from __future__ import annotations

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
from capplan.executor.client import Client, _litellm_completion
from capplan.executor.cost import has_token_counts, priced
from capplan.executor.plan import Plan
from capplan.executor.loop_errors import LoopErrorReason
from capplan.executor.rate_limit import wire_status
from capplan.executor.result import GenerationResult
from tests.chat_route import chat_route_plans
from tests.executor.log_level import capplan_logs_at
from tests.fake_provider import FakeProvider, Reply, json_reply, serving_with_keys

ROOT = Path(__file__).resolve().parents[2]
KEYS = {"OPENROUTER_API_KEY": "sk-or-resp", "OPENAI_API_KEY": "sk-oa-resp", "XAI_API_KEY": "sk-x-resp",
        "AZURE_AI_API_KEY": "sk-az-resp", "NOVA_API_KEY": "sk-nova-resp"}
CONVERSATION = golden_wire.conversations(ROOT)["dict_map_tools"]

#: the catalogue on chat completions (gpt-5, o3 and Grok 4.6 included: the Responses route has its
#: own identity tests, tests/executor/test_direct_responses_wire_identity.py)
PLANS = [p for p in chat_route_plans().values() if p.wire is not None and p.wire.protocol == "openai-chat"]
#: one plan per provider and per reasoning codec, for the failure cases (each costs up to five attempts a side)
FAILURE_PLANS = ["kimi-k3", "claude-opus-4.7-openrouter", "gpt-5", "grok-4.6", "cohere-command-a-plus", "nova-pro"]

CALL = {"id": "call_1", "type": "function",
        "function": {"name": "create_invoice", "arguments": json.dumps(
            {"customer": "ACME", "format": "pdf", "due": "2026-01-31",
             "lines": {"consulting": {"qty": 2, "unit_price": 150.5}}})}}


def _body(message: dict[str, Any], *, finish: str | None = "stop", usage: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"id": "gen-1", "object": "chat.completion", "created": 1767225600, "model": "m",
                            "choices": [{"index": 0, "finish_reason": finish,
                                         "message": {"role": "assistant", **message}}]}
    if usage is not None:
        body["usage"] = usage
    return body


USAGE = {"prompt_tokens": 1200, "completion_tokens": 80, "total_tokens": 1280,
         "prompt_tokens_details": {"cached_tokens": 1000},
         "completion_tokens_details": {"reasoning_tokens": 30}}

SUCCESSES: dict[str, Reply] = {
    "text": json_reply(_body({"content": "Invoice drafted."}, usage=USAGE)),
    "text_with_cost_and_generation_id": json_reply(
        _body({"content": "Done."}, usage={**USAGE, "cost": 0.00123}), headers={"x-generation-id": "gen-abc-123"}),
    "tool_call": json_reply(_body({"content": None, "tool_calls": [CALL]}, finish="tool_calls", usage=USAGE)),
    "tool_call_finish_stop": json_reply(_body({"content": "", "tool_calls": [CALL]}, finish="stop", usage=USAGE)),
    "tool_call_finish_null": json_reply(_body({"content": None, "tool_calls": [CALL]}, finish=None, usage=USAGE)),
    "tool_call_truncated_arguments": json_reply(_body({"content": None, "tool_calls": [
        {**CALL, "function": {"name": "create_invoice", "arguments": '{"customer": "ACME", "format": "pd'}}]},
        finish="length", usage=USAGE)),
    "tool_call_unknown_tool": json_reply(_body({"content": None, "tool_calls": [
        {**CALL, "function": {"name": "delete_everything", "arguments": "{}"}}]}, finish="tool_calls", usage=USAGE)),
    "reasoning_content": json_reply(_body({"content": "Sure.", "reasoning_content": "The user wants an invoice."},
                                           usage=USAGE)),
    "reasoning_and_details": json_reply(_body({
        "content": "Sure.", "reasoning": "Plan the invoice.",
        "reasoning_details": [{"type": "reasoning.text", "text": "Plan the invoice.", "signature": "sig-1",
                               "format": "anthropic-claude-v1", "index": 0}]}, usage=USAGE)),
    "think_tags": json_reply(_body({"content": "<think>count the hours</think>Two hours."}, usage=USAGE)),
    "refusal_and_extra_fields": json_reply(_body({"content": "No.", "refusal": None, "annotations": []},
                                                  usage=USAGE)),
    "no_usage": json_reply(_body({"content": "Hi."})),
    "anthropic_cache_counters": json_reply(_body({"content": "Cached."}, usage={
        "prompt_tokens": 900, "completion_tokens": 10, "total_tokens": 910,
        "prompt_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 400, "cache_read_tokens": 300}})),
}

OPENAI_CONTEXT = {"error": {"message": "This model's maximum context length is 128000 tokens. However, your messages "
                                       "resulted in 130512 tokens. Please reduce the length of the messages.",
                            "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}
OPENROUTER_CONTEXT = {"error": {"message": "This endpoint's maximum context length is 131072 tokens. However, you "
                                           "requested about 200312 tokens (200000 of text input, 312 in the output). "
                                           "Please reduce the length of either one, or use the \"middle-out\" "
                                           "transform to compress your prompt automatically.",
                                "code": 400, "metadata": {"provider_name": None}}}


def _error(status: int, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": {"message": message, "code": status, **extra}}


#: failure name -> the answer each attempt gets (a retried failure repeats; five is the controllers' ceiling)
FAILURES: dict[str, Reply] = {
    "400": json_reply(_error(400, "Invalid value for 'temperature'", type="invalid_request_error"), 400),
    "401": json_reply(_error(401, "No auth credentials found"), 401),
    "404": json_reply(_error(404, "No endpoints found for this model"), 404),
    "408": json_reply(_error(408, "Request timed out upstream"), 408),
    "429_retry_after": json_reply(_error(429, "Rate limit exceeded: free-models-per-min"), 429, {"Retry-After": "30"}),
    "500": json_reply(_error(500, "Internal Server Error"), 500),
    "503": json_reply(_error(503, "No instances available"), 503),
    "context_window_openai": json_reply(OPENAI_CONTEXT, 400),
    "context_window_openrouter": json_reply(OPENROUTER_CONTEXT, 400),
    "truncated_json": Reply(raw=b'{"id": "gen-1", "object": "chat.completion", "choi', status=200),
    "dropped_connection": Reply(drop=True),
    # something other than the provider answered: infrastructure, sent once on both transports
    "html_page_200": Reply(raw=b"<!DOCTYPE html><html><body>Sign in to the guest network</body></html>", status=200),
    "no_choices_200": json_reply({"id": "gen-1", "object": "chat.completion", "model": "m"}),
}


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProvider]:
    with serving_with_keys(KEYS) as srv:  # litellm's own routes read os.environ
        yield srv


@pytest.fixture(scope="module")
def litellm_completion() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    return _litellm_completion()


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    # retries and dropped parameters are logged; they are not what these tests read
    with capplan_logs_at(logging.CRITICAL):
        yield


def _clients(plan: Plan, server: FakeProvider, completion: Any) -> tuple[Client, Client]:
    waits: list[float] = []
    direct = Client(plan, env=dict(KEYS), api_base=server.base, sleep=waits.append)
    via_litellm = Client(plan, env=dict(KEYS), api_base=server.base, completion=completion, sleep=waits.append)
    return direct, via_litellm


def _usable(plan: Plan) -> bool:
    try:
        Client(plan, env=dict(KEYS)).build(CONVERSATION)
    except UserError:
        return False
    return True


def _outcome(client: Client, server: FakeProvider, answer: Reply, repeat: int = 1) -> GenerationResult | BaseException:
    server.script(*([answer] * repeat))
    try:
        return client.generate(CONVERSATION)
    except Exception as exc:  # noqa: BLE001 - the failure is what is compared
        return exc


def _result_fields(result: GenerationResult) -> dict[str, Any]:
    usage = result.usage
    return {
        "text": result.text, "tool_calls": result.tool_calls, "reasoning": result.reasoning,
        "usage": (usage.prompt_tokens, usage.completion_tokens, usage.reasoning_tokens, usage.cached_tokens,
                  usage.cache_creation_input_tokens, usage.cache_read_input_tokens),
        "finish_reason": result.finish_reason, "parser_errors": result.parser_errors,
        "validation_errors": result.validation_errors, "openrouter_generation_id": result.openrouter_generation_id,
        "argument_repairs": result.argument_repairs, "value_substitutions": result.value_substitutions,
        "reasoning_left_out": result.reasoning_left_out, "effective_system_prompt": result.effective_system_prompt,
    }


SUCCESS_CASES = [pytest.param(plan, name, id=f"{plan.model.key}-{name}") for plan in PLANS for name in SUCCESSES]


@pytest.mark.parametrize(("plan", "answer"), SUCCESS_CASES)
def test_a_parsed_answer_equals_litellms(server: FakeProvider, litellm_completion: Any, plan: Plan,
                                         answer: str) -> None:
    if not _usable(plan):
        pytest.skip("the plan refuses the conversation while building")
    direct, via_litellm = _clients(plan, server, litellm_completion)
    theirs = _outcome(via_litellm, server, SUCCESSES[answer])
    ours = _outcome(direct, server, SUCCESSES[answer])
    if isinstance(theirs, BaseException) or isinstance(ours, BaseException):
        # a response the parser refuses (reasoning it cannot read) must be refused alike
        assert isinstance(theirs, BaseException) and isinstance(ours, BaseException), (theirs, ours)
        assert (type(ours), str(ours)) == (type(theirs), str(theirs))
        return
    assert _result_fields(ours) == _result_fields(theirs)
    reported = json.loads(SUCCESSES[answer].raw).get("usage", {}).get("cost")
    if reported is not None or theirs.cost_source != "litellm":
        assert (ours.cost_usd, ours.cost_source) == (theirs.cost_usd, theirs.cost_source)
    else:
        # docs/deviations.md: litellm prices an answer without usage.cost from its own cost map, per call
        # (an answer without token counts included, at $0); the direct transport prices it from the
        # plan's pricing entry (pricing.json), and an answer without token counts is of unknown cost
        assert plan.pricing is not None
        expected = (priced(ours.usage, plan.pricing), "pricing") if has_token_counts(ours.usage) else (None, "unknown")
        assert (ours.cost_usd, ours.cost_source) == expected


def _verdict(client: Client, exc: BaseException) -> dict[str, Any]:
    decision = client.classify_loop_error(exc)
    return {
        "attempts": [(a.status, a.error_class) for a in attempts_of(exc)],
        "error_class": error_class(exc),
        "status": next((s for s in (wire_status(link) for link in _chain(exc)) if s is not None), None),
        "loop_reason": decision.reason, "excluded": decision.excluded,
    }


def _chain(exc: BaseException) -> Iterator[BaseException]:
    link: BaseException | None = exc
    while link is not None:
        yield link
        link = link.__cause__


FAILURE_CASES = [pytest.param(key, name, id=f"{key}-{name}") for key in FAILURE_PLANS for name in FAILURES]

#: routes litellm sends through the openai SDK (its own httpx sender serves OpenRouter and xAI)
SDK_ROUTES = frozenset({"gpt-5", "cohere-command-a-plus", "nova-pro"})
OPENROUTER_ROUTES = frozenset({"kimi-k3", "claude-opus-4.7-openrouter"})
API_ERROR, WINDOW = LoopErrorReason.API_ERROR, LoopErrorReason.CONTEXT_WINDOW_EXCEEDED


def documented(key: str, failure: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The rows of docs/deviations.md ("direct transport"): (litellm's verdict, the direct transport's), by field."""
    if failure == "context_window_openrouter" or (failure == "context_window_openai" and key in OPENROUTER_ROUTES):
        # litellm reads OpenRouter's wording, and OpenAI's relayed by OpenRouter, as a plain bad request
        return {"loop_reason": API_ERROR}, {"loop_reason": WINDOW}
    if failure == "dropped_connection":
        # litellm reports the openai SDK's / httpx's connection error as an InternalServerError with status 500
        return ({"status": 500, "error_class": "server_error", "attempts": [("error", "server_error")] * 5},
                {"status": None, "error_class": "connection", "attempts": [("error", "connection")] * 5})
    if failure == "no_choices_200" or (failure == "html_page_200" and key in SDK_ROUTES):
        # litellm relabels the 200 it could not read as a 500; both send it once and call it infrastructure
        return {"status": 500}, {"status": 200}
    if failure == "truncated_json" and key in SDK_ROUTES:
        # the openai SDK turns an unreadable 200 body into a 500 that is retried; litellm's own sender (and
        # the direct transport) report the 200 whose body is not a response, and do not send it again
        return ({"status": 500, "error_class": "server_error", "attempts": [("error", "server_error")] * 5},
                {"status": 200, "error_class": "other", "attempts": [("error", "other")]})
    return None


@pytest.mark.parametrize(("key", "failure"), FAILURE_CASES)
def test_a_failure_is_classified_and_retried_as_litellms(server: FakeProvider, litellm_completion: Any, key: str,
                                                         failure: str) -> None:
    plan = next(p for p in PLANS if p.model.key == key)
    direct, via_litellm = _clients(plan, server, litellm_completion)
    theirs = _outcome(via_litellm, server, FAILURES[failure], repeat=5)
    their_requests = len(server.requests)
    ours = _outcome(direct, server, FAILURES[failure], repeat=5)
    our_requests = len(server.requests)
    assert isinstance(theirs, BaseException) and isinstance(ours, BaseException), (theirs, ours)
    mine, litellms = _verdict(direct, ours), _verdict(via_litellm, theirs)
    row = documented(key, failure)
    if row is not None:
        their_fields, our_fields = row
        assert {k: litellms[k] for k in their_fields} == their_fields, "the documented litellm behaviour changed"
        assert {k: mine[k] for k in our_fields} == our_fields
        for name in set(their_fields) | set(our_fields):
            mine.pop(name, None)
            litellms.pop(name, None)
        if "attempts" in our_fields:
            their_requests = our_requests
    assert mine == litellms
    assert our_requests == their_requests, "the same number of attempts reached the server"


@pytest.mark.parametrize("key", ["kimi-k3", "gpt-5"])
def test_retry_after_is_honoured_alike(server: FakeProvider, litellm_completion: Any, key: str) -> None:
    plan = next(p for p in PLANS if p.model.key == key)
    waits: dict[str, list[float]] = {"direct": [], "litellm": []}
    direct = Client(plan, env=dict(KEYS), api_base=server.base, sleep=waits["direct"].append)
    via_litellm = Client(plan, env=dict(KEYS), api_base=server.base, completion=litellm_completion,
                         sleep=waits["litellm"].append)
    ok = json_reply(_body({"content": "later"}, usage=USAGE))
    for _name, client in (("direct", direct), ("litellm", via_litellm)):
        server.script(FAILURES["429_retry_after"], ok)
        result = client.generate(CONVERSATION)
        assert result.text == "later"
        assert [(a.status, a.error_class) for a in result.attempts] == [("error", "rate_limit"), ("ok", None)]
    # the controllers' own first wait is 4 s; the provider asked for 30
    assert waits["direct"] == waits["litellm"] == [30.0]
