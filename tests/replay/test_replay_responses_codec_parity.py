"""The replay eval's Responses wire and the plan's codec replay the same reasoning items.

The eval (``evals/reasoning_replay``) keeps its own standard-library wire; a plan on a Responses
route replays through the ``openai_responses`` codec and ``executor/responses_request.py``. For one
scripted answer (capplan's strict Responses emulator, each route's own carrier mint), both must put
the same reasoning item, byte for byte, immediately before the same follower, and the emulator
must accept both requests. Run for the eval's two Responses routes and a bundled plan of each.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from capplan.conformance.corpus import load_corpus
from capplan.conformance.emulator import Reply
from capplan.conformance.emulators.openai_responses import ResponsesEmulator
from capplan.evals.reasoning_replay.fixture import SYSTEM, TOOL_DESCRIPTION, TOOL_NAME, TOOL_PARAMETERS, USER_TASK
from capplan.evals.reasoning_replay.opaque.responses import ResponsesFlavour
from capplan.evals.reasoning_replay.routes import ROUTES
from capplan.evals.reasoning_replay.wire.knobs import Knobs
from capplan.evals.reasoning_replay.wire.responses import ResponsesWire
from capplan.executor.client import Client
from capplan.executor.plan import Plan

REPO = Path(__file__).resolve().parents[2]
ENV = {"OPENAI_API_KEY": "sk-test-parity-0123456789", "XAI_API_KEY": "xai-test-parity-0123456789"}
#: (the eval's route, the bundled plan on that route, the emulator's route)
CASES = [("openai-responses", "gpt-5", "openai"), ("xai-responses", "grok-4.6", "xai")]
TOOL = {"type": "function", "function": {"name": TOOL_NAME, "description": TOOL_DESCRIPTION,
                                         "parameters": TOOL_PARAMETERS}}


def _bytes(item: Any) -> bytes:
    # as both wires serialise a body: insertion order kept, so a reordered or renamed key differs
    return json.dumps(item, ensure_ascii=False).encode("utf-8")


def _reasoning_pairs(items: list[dict[str, Any]]) -> list[tuple[bytes, bytes]]:
    """Each reasoning input item and the item right after it, as bytes."""
    return [(_bytes(item), _bytes(items[n + 1]) if n + 1 < len(items) else b"")
            for n, item in enumerate(items) if item.get("type") == "reasoning"]


@pytest.fixture(params=CASES, ids=[case[0] for case in CASES])
def route(request: pytest.FixtureRequest) -> Iterator[tuple[str, Plan, ResponsesEmulator]]:
    eval_route, plan_key, emulator_route = request.param
    plan = Plan.load(REPO / "golden" / "plans" / f"{plan_key}.json")
    emu = ResponsesEmulator(load_corpus().rules, route=emulator_route,
                            script=[Reply(tool_calls=((TOOL_NAME, {"city": "Paris"}),),
                                          reasoning="The weather tool answers this.")]).start()
    yield eval_route, plan, emu
    emu.stop()


def test_the_eval_and_the_codec_replay_the_same_item_before_the_same_follower(
        route: tuple[str, Plan, ResponsesEmulator]) -> None:
    eval_route, plan, emu = route
    client = Client(plan, env=ENV, api_base=emu.base_url + "/v1")
    # reasoning asked for explicitly: the grok-4.6 plan reasons by default without an effort, and the
    # emulator mints a reasoning item only for a request that names one (as the eval's turn 1 does)
    request: dict[str, Any] = {"system": SYSTEM, "messages": [{"role": "user", "content": USER_TASK}],
                               "tools": [TOOL], "reasoning": {"mode": "adaptive", "effort_hint": "low"}}
    first = client.generate(request)  # the scripted answer: a reasoning item, then the function_call
    [turn1] = emu.exchanges
    output = turn1.answer["output"]
    assert [item["type"] for item in output] == ["reasoning", "function_call"]
    assert output[0]["encrypted_content"]

    # the eval: its capture of that same answer, turn 2 in the loop ("verbatim")
    flavour = ResponsesFlavour()
    capture = flavour.capture(turn1.answer, ROUTES[eval_route])
    assert capture.usable
    cells = {variant: payload for variant, payload, _ in flavour.turn2(capture, "in_loop", "Reply NONE.",
                                                                       ROUTES[eval_route])}
    eval_input = cells["verbatim"]

    # the plan: the next turn with the result's reasoning replayed, as the trial loop sends it
    [call] = first.tool_calls
    history = {**request, "messages": [
        *request["messages"],
        {"role": "assistant", "content": None, "reasoning": _reasoning_in(first),
         "tool_calls": [{"id": call.id, "type": "function",
                         "function": {"name": call.name, "arguments": call.raw_arguments}}]},
        {"role": "tool", "tool_call_id": call.id, "content": "18 C"}]}
    built = client.build(history)
    assert built.reasoning_left_out == ()
    plan_input = built.kwargs["input"]

    pairs = _reasoning_pairs(eval_input)
    assert len(pairs) == 1 and pairs == _reasoning_pairs(plan_input)
    item, follower = pairs[0]
    assert json.loads(item)["encrypted_content"] == output[0]["encrypted_content"]
    assert json.loads(follower)["id"] == output[1]["id"]  # the follower is the call the reasoning preceded

    # the stripped baseline is what the plan sends when the reasoning is left out: the call by call_id alone
    assert [_bytes(i) for i in cells["stripped"] if i.get("type") == "function_call"] == [
        _bytes({k: v for k, v in json.loads(follower).items() if k != "id"})]

    # and the strict emulator accepts both requests: the eval's body and the plan's
    model = turn1.body["model"]
    wire = ResponsesWire()
    eval_body = wire.body(model, eval_input, Knobs(temperature=None, effort=None), 256)
    status, answer = emu.answer("/v1/responses", _bytes(eval_body))
    assert status == 200, answer
    emu.script([Reply(text="18 C")])
    client.generate(history)
    assert [(e.status, e.violations) for e in emu.exchanges[1:]] == [(200, ()), (200, ())]
    assert _reasoning_pairs(emu.exchanges[-1].body["input"]) == pairs


def _reasoning_in(result: Any) -> dict[str, Any]:
    from capplan.executor.messages import ReasoningIn

    return ReasoningIn.from_structured(result.reasoning).model_dump(mode="json")
