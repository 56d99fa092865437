"""Gemini generateContent rules: the emulator refuses what Gemini refuses, and capplan's plan passes.

For every rule a hand-built (naive) request is refused with the provider's exact status and body,
so the emulator is shown to enforce it. Then the bundled ``gemini-3.1-pro-preview`` plan goes the
real path (``Client`` → litellm's Gemini route → the loopback emulator) through two user turns of
tool loops, with parallel calls, thinking on and off, and tool schemas full of keywords outside
Gemini's Schema; each result's reasoning is fed back the way the trial loop feeds it. Every
request must be accepted while held to every rule, and the thought signatures the emulator minted
must be what comes back on the wire (not litellm's documented placeholder).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Mapping
from typing import Any

import httpx
import pytest

from capplan.conformance.carriers import CarrierMint
from capplan.conformance.corpus import Corpus
from capplan.conformance.emulator import Reply
from capplan.conformance.emulators import emulator_for
from capplan.conformance.emulators.gemini import GeminiEmulator, call_text, current_turn_start
from capplan.executor.client import Client
from capplan.executor.messages import ReasoningIn
from capplan.executor.plan import Plan
from capplan.executor.result import GenerationResult
from capplan.trials.loop.tool_call_ids import ToolCallIds

PLAN = "golden/plans/gemini-3.1-pro-preview.json"
MODEL = "gemini-3.1-pro-preview"
KEY = "gemini-test-key"
#: a bound for every wait on the emulator (never a timing assertion)
TIMEOUT_S = 30.0

MISSING = ("Function call is missing a thought_signature in functionCall parts. This is required for tools to "
           "work correctly, and missing thought_signature may lead to degraded model performance. Additional "
           "data, function call `default_api:{name}` , position {position}. Please refer to "
           "https://ai.google.dev/gemini-api/docs/thought-signatures for more details.")


@pytest.fixture
def emulator(corpus: Corpus) -> Iterator[GeminiEmulator]:
    emu = GeminiEmulator(corpus.rules, route="gemini")
    emu.start()
    try:
        yield emu
    finally:
        emu.stop()


def post(emu: GeminiEmulator, body: Mapping[str, Any], model: str = MODEL,
         method: str = "generateContent") -> httpx.Response:
    """A hand-built request, as a client that does not know the rules would send it."""
    return httpx.post(f"{emu.base_url}/v1beta/models/{model}:{method}", json=body,
                      headers={"x-goog-api-key": KEY}, timeout=TIMEOUT_S)


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": text}]}


def calls(*named: tuple[str, dict[str, Any]], signature: str | None = None) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    for index, (name, args) in enumerate(named):
        part: dict[str, Any] = {"functionCall": {"name": name, "args": args}}
        if index == 0 and signature is not None:
            part["thoughtSignature"] = signature
        parts.append(part)
    return {"role": "model", "parts": parts}


def responses(*names: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"functionResponse": {"name": n, "response": {"content": "ok"}}} for n in names]}


FLAT_TOOL = {"functionDeclarations": [{"name": "lookup", "description": "Look a city up.", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]}


def error_message(response: httpx.Response) -> str:
    return str(response.json()["error"]["message"])


# --- the emulator and its corpus -------------------------------------------------------------------


def test_gemini_is_a_shipped_protocol_and_its_rules_load(corpus: Corpus) -> None:
    assert emulator_for("gemini-generate-content") is GeminiEmulator
    ids = {rule.id for rule in corpus.rules if rule.protocol == "gemini-generate-content"}
    assert ids == {"gemini.thought_signature_missing", "gemini.thought_signature_corrupted",
                   "gemini.schema_unknown_field", "gemini.schema_type_list",
                   "gemini.function_response_count", "gemini.function_call_turn_order"}
    for rule in corpus.rules:
        assert all(source.url.startswith("https://") for source in rule.sources)


def test_only_generate_content_is_served(emulator: GeminiEmulator) -> None:
    answer = post(emulator, {"contents": [user("hi")]}, method="streamGenerateContent")
    assert answer.status_code == 404
    assert answer.json()["error"]["status"] == "NOT_FOUND"
    assert post(emulator, {"contents": [user("hi")]}).status_code == 200


def test_success_is_a_generate_content_response(emulator: GeminiEmulator) -> None:
    emulator.script([Reply(tool_calls=(("lookup", {"city": "Paris"}), ("lookup", {"city": "Rome"})))])
    body = {"contents": [user("weather?")], "tools": [FLAT_TOOL],
            "generationConfig": {"thinkingConfig": {"thinkingLevel": "high", "includeThoughts": True}}}
    answer = post(emulator, body).json()
    candidate = answer["candidates"][0]
    parts = candidate["content"]["parts"]
    assert candidate["finishReason"] == "STOP" and candidate["content"]["role"] == "model"
    assert parts[0] == {"text": "Let me think about which tool answers this.", "thought": True}
    assert parts[1]["functionCall"] == {"name": "lookup", "args": {"city": "Paris"}}
    # Gemini 3 signs the first call of a parallel step, over that call
    assert emulator.mint.verify(parts[1]["thoughtSignature"], MODEL, call_text("lookup", {"city": "Paris"}))
    assert "thoughtSignature" not in parts[2]
    usage = answer["usageMetadata"]
    assert usage["thoughtsTokenCount"] > 0
    assert usage["totalTokenCount"] == usage["promptTokenCount"] + usage["candidatesTokenCount"] + usage["thoughtsTokenCount"]
    # deterministic: the same request is answered with the same counts
    emulator.script([Reply(tool_calls=(("lookup", {"city": "Paris"}), ("lookup", {"city": "Rome"})))])
    assert post(emulator, body).json()["usageMetadata"] == usage


def test_the_current_turn_starts_at_the_last_user_text() -> None:
    contents = [user("a"), calls(("f", {})), responses("f"), {"role": "model", "parts": [{"text": "x"}]},
                user("b"), calls(("f", {})), responses("f")]
    assert current_turn_start(contents) == 4
    assert current_turn_start([calls(("f", {}))]) == 0


# --- rule 1: Gemini 3 function calls of the current turn keep their thought signature ---------------


def test_naive_unsigned_call_of_the_current_turn_is_refused(emulator: GeminiEmulator) -> None:
    body = {"contents": [user("weather?"), calls(("lookup", {"city": "Paris"})), responses("lookup")],
            "tools": [FLAT_TOOL]}
    answer = post(emulator, body)
    assert answer.status_code == 400
    assert answer.json() == {"error": {"code": 400, "status": "INVALID_ARGUMENT",
                                       "message": MISSING.format(name="lookup", position=2)}}
    exchange = emulator.exchanges[-1]
    assert exchange.violations[0].rule_id == "gemini.thought_signature_missing"


def test_proto_field_names_are_read_too(emulator: GeminiEmulator) -> None:
    # litellm writes parts with proto names (function_call, function_response); the rule reads both spellings
    body = {"contents": [user("weather?"),
                         {"role": "model", "parts": [{"function_call": {"name": "lookup", "args": {"city": "Paris"}}}]},
                         {"role": "user", "parts": [{"function_response": {"name": "lookup", "response": {}}}]}],
            "tools": [{"function_declarations": FLAT_TOOL["functionDeclarations"]}]}
    assert error_message(post(emulator, body)) == MISSING.format(name="lookup", position=2)


def test_the_position_is_the_model_contents_place_in_the_conversation(emulator: GeminiEmulator) -> None:
    signed = emulator.mint.mint(MODEL, call_text("lookup", {"city": "Paris"}))
    body = {"contents": [user("weather?"), calls(("lookup", {"city": "Paris"}), signature=signed),
                         responses("lookup"), calls(("forecast", {"city": "Paris"})), responses("forecast")],
            "tools": [FLAT_TOOL]}
    assert error_message(post(emulator, body)) == MISSING.format(name="forecast", position=4)


def test_only_the_current_turn_is_validated(emulator: GeminiEmulator) -> None:
    # an unsigned call in an earlier turn (before the last user text) is not validated
    body = {"contents": [user("weather?"), calls(("lookup", {"city": "Paris"})), responses("lookup"),
                         {"role": "model", "parts": [{"text": "Sunny."}]}, user("and Rome?")],
            "tools": [FLAT_TOOL]}
    assert post(emulator, body).status_code == 200


def test_only_the_first_parallel_call_needs_a_signature(emulator: GeminiEmulator) -> None:
    signed = emulator.mint.mint(MODEL, call_text("lookup", {"city": "Paris"}))
    body = {"contents": [user("weather?"), calls(("lookup", {"city": "Paris"}), ("lookup", {"city": "Rome"}),
                                                 signature=signed), responses("lookup", "lookup")],
            "tools": [FLAT_TOOL]}
    assert post(emulator, body).status_code == 200


def test_earlier_models_do_not_enforce_signatures(emulator: GeminiEmulator) -> None:
    body = {"contents": [user("weather?"), calls(("lookup", {"city": "Paris"})), responses("lookup")],
            "tools": [FLAT_TOOL]}
    assert post(emulator, body, model="gemini-2.5-pro").status_code == 200
    assert "gemini.thought_signature_missing" not in emulator.exchanges[-1].rules


# --- rule 2: a signature is replayed unchanged, to the model and route that made it -----------------


CORRUPTED = {"error": {"code": 400, "message": "Corrupted thought signature.", "status": "INVALID_ARGUMENT"}}


@pytest.mark.parametrize("how", ["edited call", "another model", "another route"])
def test_naive_foreign_or_edited_signature_is_refused(emulator: GeminiEmulator, how: str) -> None:
    paris = call_text("lookup", {"city": "Paris"})
    signature = {
        "edited call": emulator.mint.mint(MODEL, call_text("lookup", {"city": "Rome"})),
        "another model": emulator.mint.mint("gemini-3-flash-preview", paris),
        "another route": CarrierMint("gemini").mint(MODEL, paris),  # another emulator's key
    }[how]
    body = {"contents": [user("weather?"), calls(("lookup", {"city": "Paris"}), signature=signature),
                         responses("lookup")], "tools": [FLAT_TOOL]}
    answer = post(emulator, body)
    assert (answer.status_code, answer.json()) == (400, CORRUPTED)


@pytest.mark.parametrize("placeholder", [
    "skip_thought_signature_validator",
    base64.b64encode(b"skip_thought_signature_validator").decode(),  # litellm's, as a bytes field's base64
    base64.b64encode(b"context_engineering_is_the_way_to_go").decode(),
])
def test_googles_documented_placeholders_pass(emulator: GeminiEmulator, placeholder: str) -> None:
    body = {"contents": [user("weather?"), calls(("lookup", {"city": "Paris"}), signature=placeholder),
                         responses("lookup")], "tools": [FLAT_TOOL]}
    assert post(emulator, body).status_code == 200


def test_a_base64_signature_that_is_no_placeholder_is_refused(emulator: GeminiEmulator) -> None:
    body = {"contents": [user("weather?"), calls(("lookup", {"city": "Paris"}),
                                                 signature=base64.b64encode(b"made up by a client").decode()),
                         responses("lookup")], "tools": [FLAT_TOOL]}
    assert post(emulator, body).json() == CORRUPTED


# --- rules 3 and 4: function declarations use Gemini's Schema ---------------------------------------


def declaration(parameters: dict[str, Any], key: str = "parameters") -> dict[str, Any]:
    return {"functionDeclarations": [
        {"name": "noop", "description": "Does nothing.", "parameters": {"type": "object", "properties": {}}},
        {"name": "lookup", "description": "Look up.", key: parameters}]}


@pytest.mark.parametrize(("parameters", "field", "location"), [
    ({"type": "object", "properties": {"city": {"type": "string"}}, "additionalProperties": False},
     "additionalProperties", "tools[0].function_declarations[1].parameters"),
    ({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {}},
     "$schema", "tools[0].function_declarations[1].parameters"),
    ({"type": "object", "properties": {"city": {"type": "string"}, "mode": {"type": "string", "const": "fast"}}},
     "const", "tools[0].function_declarations[1].parameters.properties[1].value"),
    ({"type": "object", "properties": {"tags": {"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}}}},
     "propertyNames", "tools[0].function_declarations[1].parameters.properties[0].value"),
    ({"type": "object", "properties": {"where": {"anyOf": [{"$ref": "#/$defs/Place"}, {"type": "string"}]}}},
     "$ref", "tools[0].function_declarations[1].parameters.properties[0].value.any_of[0]"),
    ({"type": "object", "properties": {"xs": {"type": "array", "items": {"type": "object", "additionalProperties": True}}}},
     "additionalProperties", "tools[0].function_declarations[1].parameters.properties[0].value.items"),
])
def test_naive_schema_keyword_outside_geminis_schema_is_refused(
        emulator: GeminiEmulator, parameters: dict[str, Any], field: str, location: str) -> None:
    answer = post(emulator, {"contents": [user("hi")], "tools": [declaration(parameters)]})
    message = f"Invalid JSON payload received. Unknown name \"{field}\" at '{location}': Cannot find field."
    assert answer.status_code == 400
    assert answer.json() == {"error": {
        "code": 400, "message": message, "status": "INVALID_ARGUMENT",
        "details": [{"@type": "type.googleapis.com/google.rpc.BadRequest",
                     "fieldViolations": [{"field": location, "description": message}]}]}}


def test_parameters_json_schema_takes_full_json_schema(emulator: GeminiEmulator) -> None:
    schema = {"type": "object", "additionalProperties": False, "properties": {"mode": {"const": "fast"}}}
    assert post(emulator, {"contents": [user("hi")], "tools": [declaration(schema, "parametersJsonSchema")]}).status_code == 200


def test_naive_type_list_is_refused(emulator: GeminiEmulator) -> None:
    parameters = {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": ["string", "null"]}}}
    answer = post(emulator, {"contents": [user("hi")], "tools": [declaration(parameters)]})
    location = "tools[0].function_declarations[1].parameters.properties[1].value"
    assert answer.status_code == 400
    assert error_message(answer) == (f"Invalid JSON payload received. Unknown name \"type\" at '{location}': "
                                     "Proto field is not repeating, cannot start list.")


# --- rules 5 and 6: the turn structure of function calling ------------------------------------------


def test_naive_missing_parallel_response_is_refused(emulator: GeminiEmulator) -> None:
    # on gemini-2.5-pro, so that only the structure is at stake (no signature rule holds there)
    body = {"contents": [user("weather?"), calls(("lookup", {"city": "Paris"}), ("lookup", {"city": "Rome"})),
                         responses("lookup")], "tools": [FLAT_TOOL]}
    answer = post(emulator, body, model="gemini-2.5-pro")
    text = ("Please ensure that the number of function response parts is equal to the number of function call "
            "parts of the function call turn.")
    assert answer.status_code == 400
    assert answer.json() == {"error": {"code": 400, "message": text, "status": "INVALID_ARGUMENT",
                                       "errors": [{"message": text, "domain": "global", "reason": "badRequest"}]}}


def test_naive_history_opening_with_a_function_call_is_refused(emulator: GeminiEmulator) -> None:
    body = {"contents": [calls(("lookup", {"city": "Paris"})), responses("lookup")], "tools": [FLAT_TOOL]}
    answer = post(emulator, body, model="gemini-2.5-pro")
    assert answer.status_code == 400
    assert answer.json() == {"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": (
        "Please ensure that function call turn comes immediately after a user turn or after a function "
        "response turn.")}}


# --- the bundled plan through capplan's real path ---------------------------------------------------


#: a tool whose parameters use every keyword Gemini's Schema lacks; capplan's sanitiser (and litellm) must fix it
AWKWARD_TOOL = {"type": "function", "function": {"name": "lookup", "description": "Look a city up.", "parameters": {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object", "additionalProperties": False,
    "properties": {
        "city": {"type": "string"},
        "mode": {"const": "fast"},
        "tags": {"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}, "additionalProperties": {"type": "string"}},
        "unit": {"anyOf": [{"type": "string", "enum": ["C", "F"]}, {"type": "null"}]},
        "where": {"$ref": "#/$defs/Place"},
    },
    "required": ["city"],
    "$defs": {"Place": {"type": "object", "additionalProperties": False,
                        "properties": {"name": {"type": "string"}}, "required": ["name"]}},
}}}
FORECAST_TOOL = {"type": "function", "function": {"name": "forecast", "description": "Tomorrow's weather.",
                                                  "parameters": {"type": "object", "properties": {
                                                      "city": {"type": "string"}}, "required": ["city"]}}}

#: two user turns, each a tool loop of four steps (a parallel step among them), then an answer
TURNS: tuple[tuple[str, tuple[Reply, ...]], ...] = (
    ("What is the weather in Paris and Rome?", (
        Reply(tool_calls=(("lookup", {"city": "Paris"}), ("lookup", {"city": "Rome"}))),
        Reply(tool_calls=(("forecast", {"city": "Paris"}),)),
        Reply(tool_calls=(("forecast", {"city": "Rome"}),)),
        Reply(text="Paris and Rome are sunny today and tomorrow."),
    )),
    ("And Oslo and Bergen?", (
        Reply(tool_calls=(("lookup", {"city": "Oslo"}),)),
        Reply(tool_calls=(("forecast", {"city": "Oslo"}), ("forecast", {"city": "Bergen"}))),
        Reply(tool_calls=(("lookup", {"city": "Bergen"}),)),
        Reply(text="Oslo and Bergen are rainy."),
    )),
)


def assistant_message(result: GenerationResult, ids: ToolCallIds) -> tuple[dict[str, Any], list[str]]:
    """The history entry the trial loop makes of a result (``trials/loop/tool_loop.py`` ``_accept``)."""
    assigned = [ids.assign(call.id) for call in result.tool_calls]
    message: dict[str, Any] = {"role": "assistant", "content": result.text or None}
    if result.tool_calls:
        message["tool_calls"] = [
            {"id": new_id, "type": "function",
             "function": {"name": call.name, "arguments": json.dumps(call.arguments, ensure_ascii=False)}}
            for call, new_id in zip(result.tool_calls, assigned)]
    if result.reasoning is not None:
        message["reasoning"] = ReasoningIn.from_structured(result.reasoning).model_dump(mode="json", exclude_none=True)
    return message, assigned


def run_conversation(emulator: GeminiEmulator, reasoning: dict[str, Any]) -> list[GenerationResult]:
    client = Client(Plan.load(PLAN), env={"GEMINI_API_KEY": KEY}, api_base=emulator.base_url)
    ids = ToolCallIds()
    messages: list[dict[str, Any]] = []
    results: list[GenerationResult] = []
    for question, replies in TURNS:
        messages.append({"role": "user", "content": question})
        emulator.script(replies)
        for _ in replies:
            result = client.generate({"messages": messages, "tools": [AWKWARD_TOOL, FORECAST_TOOL],
                                      "reasoning": reasoning})
            results.append(result)
            message, assigned = assistant_message(result, ids)
            messages.append(message)
            for call, call_id in zip(result.tool_calls, assigned):
                messages.append({"role": "tool", "tool_call_id": call_id, "content": f"{call.name}: sunny"})
    return results


@pytest.fixture
def gemini_key(monkeypatch: pytest.MonkeyPatch) -> None:
    # the bundled gemini binding leaves the key to litellm, which reads it from the process environment
    monkeypatch.setenv("GEMINI_API_KEY", KEY)


@pytest.mark.parametrize("reasoning", [{"mode": "adaptive", "effort_hint": "high"}, {"mode": "off"}],
                         ids=["thinking-on", "thinking-off"])
def test_bundled_plan_passes_every_rule_through_two_turns_of_tool_loops(
        emulator: GeminiEmulator, gemini_key: None, reasoning: dict[str, Any]) -> None:
    results = run_conversation(emulator, reasoning)
    every_rule = {rule.id for rule in emulator.rules}
    assert len(emulator.exchanges) == sum(len(replies) for _, replies in TURNS) == 8
    for exchange in emulator.exchanges:
        assert exchange.violations == () and exchange.status == 200, exchange.answer
        assert set(exchange.rules) == every_rule
    # the tool calls came back as scripted (the parallel step had two)
    assert [len(r.tool_calls) for r in results] == [2, 1, 1, 0, 1, 2, 1, 0]
    assert results[3].text == "Paris and Rome are sunny today and tomorrow."
    if reasoning["mode"] != "off":
        assert emulator.exchanges[0].body["generationConfig"]["thinkingConfig"]["includeThoughts"] is True
        assert all(r.reasoning is not None and r.reasoning.blocks for r in results)
        assert results[0].usage.reasoning_tokens
    else:
        # Gemini 3 still signs its function calls with thinking off; the loop must replay them all the same
        assert "thinkingConfig" not in (emulator.exchanges[0].body.get("generationConfig") or {})
        assert all(r.reasoning is None or not r.reasoning.blocks for r in results)


@pytest.mark.parametrize("reasoning", [{"mode": "adaptive", "effort_hint": "high"}, {"mode": "off"}],
                         ids=["thinking-on", "thinking-off"])
def test_the_wire_carries_the_minted_signatures_not_placeholders(
        emulator: GeminiEmulator, gemini_key: None, reasoning: dict[str, Any]) -> None:
    run_conversation(emulator, reasoning)
    last = emulator.exchanges[-1].body
    contents = last["contents"]
    replayed = 0
    for content in contents[current_turn_start(contents):]:
        if content["role"] != "model":
            continue
        call_parts = [p for p in content["parts"] if "functionCall" in p or "function_call" in p]
        if not call_parts:
            continue
        first = call_parts[0]
        call = first.get("functionCall") or first["function_call"]
        assert emulator.mint.verify(first.get("thoughtSignature"), MODEL, call_text(call["name"], call["args"])), first
        replayed += 1
    assert replayed == 3  # every step of the current turn's loop
    # the first turn's answer is replayed with the signature minted over its text
    signed_texts = [p for c in contents for p in c["parts"]
                    if c["role"] == "model" and p.get("text") == "Paris and Rome are sunny today and tomorrow."]
    assert signed_texts and all(p.get("thoughtSignature", "").startswith("cpl1") for p in signed_texts)


def test_the_sanitised_tool_schema_reaches_the_wire_in_geminis_schema(emulator: GeminiEmulator, gemini_key: None) -> None:
    emulator.script([Reply(text="ok")])
    client = Client(Plan.load(PLAN), env={"GEMINI_API_KEY": KEY}, api_base=emulator.base_url)
    client.generate({"messages": [{"role": "user", "content": "hi"}], "tools": [AWKWARD_TOOL]})
    exchange = emulator.exchanges[-1]
    assert exchange.status == 200 and exchange.violations == ()
    tools = exchange.body["tools"]
    declarations = tools[0].get("functionDeclarations") or tools[0]["function_declarations"]
    sent = json.dumps(declarations)
    for keyword in ("additionalProperties", "$schema", "const", "propertyNames", "$ref", "$defs"):
        assert keyword not in sent
    assert declarations[0]["parameters"]["properties"]["city"]["type"].lower() == "string"
