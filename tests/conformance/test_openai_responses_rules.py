"""The OpenAI Responses emulator: every rule refuses its naive request with the provider's exact
answer, and a correct client's tool loop (hand-built, the openai SDK's, litellm's bridge) passes.

Every test starts its own loopback emulator (127.0.0.1, an ephemeral port) and stops it on exit.
"""

from __future__ import annotations

import copy
import json
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from capplan.conformance.corpus import BUNDLED_DIR, Corpus, load_corpus
from capplan.conformance.emulator import Reply
from capplan.conformance.emulators import checks_by_protocol, emulator_for
from capplan.conformance.emulators.openai_responses import CHECKS, ResponsesEmulator, unseal
from capplan.conformance.responses_replay import (
    call_outputs,
    drop_origin_bound,
    function_calls,
    http_send,
    replay_items,
    run_tool_loop,
)
from capplan.core.diagnostics import InputError

PROTOCOL = "openai-responses"
TOOLS = [{"type": "function", "name": "lookup", "description": "Look a word up.", "strict": False,
          "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}]
THINKING = {"reasoning": {"effort": "low", "summary": "auto"}, "include": ["reasoning.encrypted_content"], "store": False}
#: three tool steps (the second with two parallel calls), then the answer
LOOP = [Reply(tool_calls=(("lookup", {"q": "alpha"}),)),
        Reply(tool_calls=(("lookup", {"q": "beta"}), ("lookup", {"q": "gamma"}))),
        Reply(tool_calls=(("lookup", {"q": "delta"}),)),
        Reply(text="alpha beta gamma delta")]


@contextmanager
def emulator(corpus: Corpus, route: str = "openai", script: Sequence[Reply] = ()) -> Iterator[ResponsesEmulator]:
    emu = ResponsesEmulator(corpus.rules, route=route, script=script)
    with emu:
        yield emu


def tool(name: str, arguments: dict[str, Any]) -> str:
    return f"{name}({arguments.get('q')}) = found"


def request(model: str, **fields: Any) -> dict[str, Any]:
    return {"model": model, "input": [{"role": "user", "content": "Look up four words."}], "tools": TOOLS, **fields}


def error_of(corpus: Corpus, rule_id: str, **fields: Any) -> dict[str, Any]:
    """The rule's error body, as the provider answers it for ``fields``."""
    return corpus.by_id[rule_id].render_error(fields)


def thinking_loop(corpus: Corpus, emu: ResponsesEmulator, model: str = "gpt-5") -> list[dict[str, Any]]:
    """A correct three-step tool loop on ``emu``; the conversation's items after it."""
    emu.script(LOOP)
    result = run_tool_loop(http_send(emu.base_url + "/v1"), request(model, **THINKING), tool)
    assert result.accepted, [step.answer for step in result.steps]
    return result.items


# --- the corpus ---------------------------------------------------------------------------------

def test_the_protocol_module_is_registered_and_its_rules_load(corpus: Corpus) -> None:
    assert emulator_for(PROTOCOL) is ResponsesEmulator
    rules = [rule for rule in corpus.rules if rule.protocol == PROTOCOL]
    assert {rule.check for rule in rules} == set(CHECKS)  # every check is used by a rule, and no rule names another
    for rule in rules:
        assert rule.sources and all(source.url.startswith("https://") for source in rule.sources)
        assert set(rule.routes) <= {"openai", "xai"}


def test_a_rule_naming_a_check_the_emulator_lacks_is_a_located_error(tmp_path: Path) -> None:
    rules = (BUNDLED_DIR / "openai_responses.yaml").read_text(encoding="utf-8")
    broken = tmp_path / "responses.yaml"
    broken.write_text(rules.replace("check: reasoning_without_follower", "check: reasoning_without_folower"), encoding="utf-8")
    with pytest.raises(InputError) as error:
        load_corpus([broken], checks=checks_by_protocol())
    (problem,) = error.value.diagnostics
    line = next(number for number, text in enumerate(broken.read_text().splitlines(), 1) if "reasoning_without_folower" in text)
    assert (problem.file, problem.line, problem.code) == (str(broken), line, "RULE")
    assert "reasoning_without_follower" in (problem.hint or "")


# --- a correct client is accepted ---------------------------------------------------------------

def test_a_three_step_tool_loop_replaying_reasoning_verbatim_is_accepted(corpus: Corpus) -> None:
    with emulator(corpus) as emu:
        items = thinking_loop(corpus, emu)
        exchanges = list(emu.exchanges)
    assert [exchange.status for exchange in exchanges] == [200, 200, 200, 200]
    # every rule of the route and model was held to on every step
    assert all("responses.reasoning_without_following_item" in exchange.rules for exchange in exchanges)
    last = exchanges[-1].body["input"]
    reasoning = [item for item in last if item.get("type") == "reasoning"]
    assert len(reasoning) == 3
    for item in reasoning:  # each reasoning item sits right before the item it was minted with
        follower = last[last.index(item) + 1]
        assert follower["id"] == unseal(item["encrypted_content"]).follower_id
    assert sum(1 for item in last if item.get("type") == "function_call_output") == 4
    # the replayed items are the answered items, byte for byte
    answered = [item for exchange in exchanges[:-1] for item in exchange.answer["output"]]
    assert [item for item in last if item.get("type") in ("reasoning", "function_call")] == answered
    assert items[-1]["type"] == "message"


def test_two_user_turns_with_the_whole_history_replayed_are_accepted(corpus: Corpus) -> None:
    with emulator(corpus) as emu:
        items = thinking_loop(corpus, emu)
        emu.script(LOOP[:1] + LOOP[3:])
        follow_up = {**request("gpt-5", **THINKING), "input": items + [{"role": "user", "content": "And once more."}]}
        result = run_tool_loop(http_send(emu.base_url + "/v1"), follow_up, tool)
    assert result.accepted and result.final_text == "alpha beta gamma delta"


def test_the_success_answer_is_a_responses_object(corpus: Corpus) -> None:
    with emulator(corpus, script=LOOP[:1]) as emu:
        status, answer = http_send(emu.base_url + "/v1")(request("gpt-5", **THINKING))
        plain_status, plain = http_send(emu.base_url + "/v1")(request("gpt-4.1"))
    assert status == 200 and answer["object"] == "response" and answer["status"] == "completed"
    assert answer["id"].startswith("resp_") and answer["incomplete_details"] is None
    reasoning, call = answer["output"]
    assert reasoning["id"].startswith("rs_") and reasoning["summary"][0]["type"] == "summary_text"
    assert call["id"].startswith("fc_") and call["call_id"].startswith("call_") and json.loads(call["arguments"]) == {"q": "alpha"}
    usage = answer["usage"]
    assert usage["output_tokens_details"]["reasoning_tokens"] > 0
    assert usage["input_tokens_details"]["cached_tokens"] == 0
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    # no reasoning asked: a plain message, no reasoning item
    assert plain_status == 200 and [item["type"] for item in plain["output"]] == ["message"]
    assert plain["output"][0]["content"][0] == {"type": "output_text", "text": "done", "annotations": [], "logprobs": []}


def test_encrypted_content_and_summary_come_only_when_asked(corpus: Corpus) -> None:
    with emulator(corpus) as emu:
        send = http_send(emu.base_url + "/v1")
        _, bare = send(request("gpt-5", reasoning={"effort": "low"}))
        _, summarised = send(request("gpt-5", reasoning={"effort": "low", "summary": "auto"}))
    assert bare["output"][0]["encrypted_content"] is None and bare["output"][0]["summary"] == []
    assert summarised["output"][0]["summary"] and summarised["output"][0]["encrypted_content"] is None


def test_only_the_responses_endpoint_is_served(corpus: Corpus) -> None:
    with emulator(corpus) as emu:
        data = json.dumps(request("gpt-5", temperature=0)).encode()
        post = urllib.request.Request(emu.base_url + "/v1/chat/completions", data=data, method="POST",
                                      headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as wrong:
            urllib.request.urlopen(post, timeout=30)
        exchange = emu.exchanges[-1]
    assert wrong.value.code == 404
    assert (exchange.violations, exchange.rules) == ((), ())  # never held to a rule: the endpoint does not exist


def test_a_streaming_request_is_refused_plainly_not_answered_as_json(corpus: Corpus) -> None:
    with emulator(corpus) as emu:
        status, answer = http_send(emu.base_url + "/v1")(request("gpt-5", stream=True))
        exchange = emu.exchanges[-1]
    assert status == 400 and "does not stream" in answer["error"]["message"]
    assert exchange.rules == () and exchange.model == "gpt-5"


def test_with_store_on_the_provider_pairs_reasoning_items_from_what_it_kept(corpus: Corpus) -> None:
    stored = {"reasoning": {"effort": "low", "summary": "auto"}}  # store defaults to true; no encrypted content
    with emulator(corpus) as emu:
        emu.script(LOOP)
        result = run_tool_loop(http_send(emu.base_url + "/v1"), request("gpt-5", **stored), tool)
        items = result.items
        reasoning = next(item for item in items if item.get("type") == "reasoning")
        follower = items[items.index(reasoning) + 1]
        status, answer = refused(emu, {**request("gpt-5", **stored), "input": [item for item in items if item is not follower]})
    assert result.accepted and len(result.steps) == 4
    assert reasoning["encrypted_content"] is None
    assert status == 400 and answer["error"]["message"] == (
        f"Item '{reasoning['id']}' of type 'reasoning' was provided without its required following item.")


# --- each rule refuses its naive request with the provider's exact answer -----------------------

def refused(emu: ResponsesEmulator, body: dict[str, Any]) -> tuple[int, Any]:
    status, answer = http_send(emu.base_url + "/v1")(body)
    assert status != 200, answer
    return status, answer


def test_encrypted_content_of_a_model_without_it(corpus: Corpus) -> None:
    with emulator(corpus) as emu:
        status, answer = refused(emu, request("gpt-4o", include=["reasoning.encrypted_content"]))
        ok, _ = http_send(emu.base_url + "/v1")(request("gpt-4o"))
        reasoning_ok, _ = http_send(emu.base_url + "/v1")(request("o3", include=["reasoning.encrypted_content"]))
    assert (status, answer) == (400, error_of(corpus, "responses.encrypted_content_unsupported"))
    assert answer["error"]["message"] == "Encrypted content is not supported with this model."
    assert (ok, reasoning_ok) == (200, 200)


@pytest.mark.parametrize("value", [0, 0.2, 2])
def test_temperature_on_a_reasoning_model(corpus: Corpus, value: float) -> None:
    with emulator(corpus) as emu:
        status, answer = refused(emu, request("gpt-5", temperature=value))
        default, _ = http_send(emu.base_url + "/v1")(request("gpt-5", temperature=1))
        other_model, _ = http_send(emu.base_url + "/v1")(request("gpt-4.1", temperature=value))
    assert status == 400
    assert answer["error"]["message"] == "Unsupported parameter: 'temperature' is not supported with this model."
    assert (default, other_model) == (200, 200)


def test_reasoning_effort_on_a_non_reasoning_model(corpus: Corpus) -> None:
    with emulator(corpus) as emu:
        status, answer = refused(emu, request("gpt-4.1", reasoning={"effort": "low"}))
    assert status == 400
    assert answer["error"] == {"message": "Unsupported parameter: 'reasoning.effort' is not supported with this model.",
                               "type": "invalid_request_error", "param": "reasoning.effort", "code": "unsupported_parameter"}


def test_an_effort_value_the_model_does_not_have(corpus: Corpus) -> None:
    with emulator(corpus) as emu:
        status, answer = refused(emu, request("gpt-5.1", reasoning={"effort": "minimal"}))
        accepted = [http_send(emu.base_url + "/v1")(request("gpt-5.1", reasoning={"effort": effort}))[0]
                    for effort in ("none", "low", "medium", "high")]
        gpt5_minimal, _ = http_send(emu.base_url + "/v1")(request("gpt-5", reasoning={"effort": "minimal"}))
    assert status == 400
    assert answer["error"]["message"] == ("Unsupported value: 'minimal' is not supported with the 'gpt-5.1' model. "
                                          "Supported values are: 'none', 'low', 'medium', and 'high'.")
    assert accepted == [200, 200, 200, 200] and gpt5_minimal == 200


def test_xai_reasoning_effort_on_a_grok_model_without_the_dial(corpus: Corpus) -> None:
    with emulator(corpus, route="xai") as emu:
        status, answer = refused(emu, request("grok-4-0709", reasoning={"effort": "high"}))
        without, _ = http_send(emu.base_url + "/v1")(request("grok-4-0709", include=["reasoning.encrypted_content"]))
        mini, _ = http_send(emu.base_url + "/v1")(request("grok-3-mini", reasoning={"effort": "high"}))
        # the OpenAI-measured rules are not carried to xAI by a glob
        held = emu.exchanges[-1].rules
    assert (status, answer) == (400, {"code": "invalid-argument", "error": "Model grok-4-0709 does not support parameter reasoningEffort."})
    assert (without, mini) == (200, 200)
    assert all(not rule.startswith("responses.encrypted") for rule in held)


def test_previous_response_id_of_an_unstored_response(corpus: Corpus) -> None:
    with emulator(corpus) as emu:
        send = http_send(emu.base_url + "/v1")
        _, unstored = send(request("gpt-5", store=False))
        _, stored = send(request("gpt-5"))
        follow = {"model": "gpt-5", "input": [{"role": "user", "content": "go on"}]}
        status, answer = refused(emu, {**follow, "previous_response_id": unstored["id"], "store": False})
        chained, _ = send({**follow, "previous_response_id": stored["id"]})
    assert (status, answer) == (400, error_of(corpus, "responses.previous_response_not_found", response_id=unstored["id"]))
    assert answer["error"]["message"] == f"Previous response with id '{unstored['id']}' not found."
    assert chained == 200


def test_a_reasoning_item_without_its_encrypted_content_under_store_false(corpus: Corpus) -> None:
    with emulator(corpus) as emu:
        items = thinking_loop(corpus, emu)
        stripped = copy.deepcopy(items)
        reasoning = next(item for item in stripped if item.get("type") == "reasoning")
        reasoning["encrypted_content"] = None
        status, answer = refused(emu, {**request("gpt-5", **THINKING), "input": stripped})
    assert status == 404
    assert answer["error"]["message"] == (f"Item with id '{reasoning['id']}' not found. Items are not persisted when `store` is set "
                                          "to false. Try again with `store` set to true, or remove this item from your input.")


def test_an_edited_reasoning_summary_does_not_verify(corpus: Corpus) -> None:
    with emulator(corpus) as emu:
        items = thinking_loop(corpus, emu)
        edited = copy.deepcopy(items)
        reasoning = next(item for item in edited if item.get("type") == "reasoning")
        reasoning["summary"][0]["text"] += " (edited)"
        status, answer = refused(emu, {**request("gpt-5", **THINKING), "input": edited})
    assert (status, answer) == (400, error_of(corpus, "responses.encrypted_content_unverified", item_id=reasoning["id"]))
    assert answer["error"]["message"] == f"The encrypted content for item {reasoning['id']} could not be verified."
    assert answer["error"]["code"] == "invalid_encrypted_content"


def test_encrypted_content_moved_to_another_reasoning_item_does_not_verify(corpus: Corpus) -> None:
    with emulator(corpus) as emu:
        items = thinking_loop(corpus, emu)
        swapped = copy.deepcopy(items)
        first, second = [item for item in swapped if item.get("type") == "reasoning"][:2]
        first["encrypted_content"], second["encrypted_content"] = second["encrypted_content"], first["encrypted_content"]
        status, answer = refused(emu, {**request("gpt-5", **THINKING), "input": swapped})
    assert status == 400 and answer["error"]["message"] == f"The encrypted content for item {first['id']} could not be verified."


def test_a_reasoning_item_without_the_item_it_preceded(corpus: Corpus) -> None:
    with emulator(corpus) as emu:
        items = thinking_loop(corpus, emu)
        reasoning = next(item for item in items if item.get("type") == "reasoning")
        follower = items[items.index(reasoning) + 1]
        dropped = [item for item in items if item is not follower]
        status, answer = refused(emu, {**request("gpt-5", **THINKING), "input": dropped})
        # the follower replayed without its id no longer names the item the reasoning needs
        anonymous = copy.deepcopy(items)
        del anonymous[items.index(follower)]["id"]
        anon_status, anon_answer = refused(emu, {**request("gpt-5", **THINKING), "input": anonymous})
    expected = error_of(corpus, "responses.reasoning_without_following_item", item_id=reasoning["id"])
    assert (status, answer) == (400, expected)
    assert answer["error"]["message"] == f"Item '{reasoning['id']}' of type 'reasoning' was provided without its required following item."
    assert (anon_status, anon_answer) == (400, expected)


def test_a_reasoning_item_last_in_the_input(corpus: Corpus) -> None:
    with emulator(corpus) as emu:
        items = thinking_loop(corpus, emu)
        reasoning = [item for item in items if item.get("type") == "reasoning"][-1]
        cut = items[: items.index(reasoning) + 1]
        status, answer = refused(emu, {**request("gpt-5", **THINKING), "input": cut})
    assert status == 400 and answer["error"]["message"].startswith(f"Item '{reasoning['id']}' of type 'reasoning'")


def test_a_function_call_without_its_reasoning_item(corpus: Corpus) -> None:
    with emulator(corpus) as emu:
        items = thinking_loop(corpus, emu)
        reasoning = next(item for item in items if item.get("type") == "reasoning")
        call = items[items.index(reasoning) + 1]
        without = [item for item in items if item is not reasoning]
        status, answer = refused(emu, {**request("gpt-5", **THINKING), "input": without})
        # every violation is recorded, the first is answered
        violations = [violation.rule_id for violation in emu.exchanges[-1].violations]
    assert (status, answer) == (400, error_of(corpus, "responses.function_call_without_reasoning",
                                              item_id=call["id"], reasoning_id=reasoning["id"]))
    assert answer["error"]["message"] == (f"Item '{call['id']}' of type 'function_call' was provided without its "
                                          f"required 'reasoning' item: '{reasoning['id']}'.")
    assert violations == ["responses.function_call_without_reasoning"]


# --- model and route switches --------------------------------------------------------------------

def test_a_model_switch_replaying_encrypted_items_is_refused_and_dropping_them_is_accepted(corpus: Corpus) -> None:
    with emulator(corpus) as emu:
        items = thinking_loop(corpus, emu, model="gpt-5")
        next_turn = items + [{"role": "user", "content": "Now with the other model."}]
        first_reasoning = next(item for item in items if item.get("type") == "reasoning")
        emu.script(LOOP)
        status, answer = refused(emu, {**request("gpt-5-mini", **THINKING), "input": next_turn})
        # only the reasoning items dropped: the calls' ids still name them
        only_reasoning = [item for item in next_turn if item.get("type") != "reasoning"]
        half_status, half_answer = refused(emu, {**request("gpt-5-mini", **THINKING), "input": only_reasoning})
        emu.script(LOOP)
        switched = run_tool_loop(http_send(emu.base_url + "/v1"),
                                 {**request("gpt-5-mini", **THINKING), "input": drop_origin_bound(next_turn)}, tool)
    assert (status, answer) == (400, error_of(corpus, "responses.encrypted_content_unverified", item_id=first_reasoning["id"]))
    assert half_status == 400 and "of type 'function_call' was provided without its required 'reasoning' item" in half_answer["error"]["message"]
    assert switched.accepted and len(switched.steps) == 4


def test_a_route_switch_replaying_another_routes_items_is_refused(corpus: Corpus) -> None:
    with emulator(corpus) as first, emulator(corpus) as second:
        items = thinking_loop(corpus, first)
        next_turn = items + [{"role": "user", "content": "Continue elsewhere."}]
        status, answer = refused(second, {**request("gpt-5", **THINKING), "input": next_turn})
        second.script(LOOP)
        moved = run_tool_loop(http_send(second.base_url + "/v1"),
                              {**request("gpt-5", **THINKING), "input": drop_origin_bound(next_turn)}, tool)
    reasoning = next(item for item in items if item.get("type") == "reasoning")
    assert status == 400 and answer["error"]["message"] == f"The encrypted content for item {reasoning['id']} could not be verified."
    assert moved.accepted


# --- the official clients ------------------------------------------------------------------------

def test_the_openai_sdk_tool_loop_is_accepted_and_refusals_reach_it_verbatim(corpus: Corpus) -> None:
    openai = pytest.importorskip("openai")
    with emulator(corpus, script=LOOP) as emu:
        client = openai.OpenAI(base_url=emu.base_url + "/v1", api_key="test-key", max_retries=0, timeout=30)
        context: list[Any] = [{"role": "user", "content": "Look up four words."}]
        texts: list[str] = []
        for _ in range(8):
            response = client.responses.create(model="gpt-5", input=context, tools=TOOLS, **THINKING)
            context += response.output  # the SDK's documented way: the output items, as returned
            calls = [item for item in response.output if item.type == "function_call"]
            if not calls:
                texts.append(response.output_text)
                break
            context += [{"type": "function_call_output", "call_id": call.call_id, "output": tool(call.name, json.loads(call.arguments))}
                        for call in calls]
        with pytest.raises(openai.BadRequestError) as refusal:
            client.responses.create(model="gpt-5-mini", input=context, tools=TOOLS, **THINKING)
        statuses = [exchange.status for exchange in emu.exchanges]
    assert statuses == [200, 200, 200, 200, 400]
    assert texts == ["alpha beta gamma delta"]
    assert refusal.value.body["message"].startswith("The encrypted content for item rs_")  # type: ignore[index]


def test_litellm_responses_bridge_tool_loop_is_accepted(corpus: Corpus, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    litellm = pytest.importorskip("litellm")
    with emulator(corpus, script=LOOP) as emu:

        def send(body: dict[str, Any]) -> tuple[int, Any]:
            fields = {key: value for key, value in body.items() if key != "model"}
            try:
                response = litellm.responses(model="openai/" + body["model"], api_base=emu.base_url + "/v1",
                                             api_key="test-key", timeout=30, **fields)
            except litellm.BadRequestError as exc:
                return int(exc.status_code), str(exc)
            return 200, response.model_dump()

        result = run_tool_loop(send, request("gpt-5", **THINKING), tool)
        sent = [exchange.body for exchange in emu.exchanges]
    assert result.accepted and result.final_text == "alpha beta gamma delta", [step.answer for step in result.steps]
    assert [exchange_body["model"] for exchange_body in sent] == ["gpt-5"] * 4
    # litellm forwards the replayed reasoning items with their encrypted content untouched
    replayed = [item for item in sent[-1]["input"] if item.get("type") == "reasoning"]
    assert len(replayed) == 3 and all(unseal(item["encrypted_content"]) is not None for item in replayed)


def test_the_replay_helper_builds_what_a_correct_client_sends(corpus: Corpus) -> None:
    with emulator(corpus, script=LOOP[1:2]) as emu:
        status, answer = http_send(emu.base_url + "/v1")(request("gpt-5", **THINKING))
    output = answer["output"]
    items = replay_items(output)
    assert items == [{key: value for key, value in item.items()} for item in output]  # output items are input-shaped already
    calls = function_calls(output)
    outputs = call_outputs(calls, tool)
    assert [out["call_id"] for out in outputs] == [call["call_id"] for call in calls]
    assert outputs[1]["output"] == "lookup(gamma) = found"
    dropped = drop_origin_bound(items + outputs)
    assert [item["type"] for item in dropped] == ["function_call", "function_call", "function_call_output", "function_call_output"]
    assert all("id" not in item for item in dropped) and all(item["call_id"] for item in dropped)
