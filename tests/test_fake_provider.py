"""The tests' fake provider behaves as its docstring says, seen by real clients: httpx, capplan, litellm.

Every other test's wire assertions rest on this fake, so its scripts, faults and recording are
pinned here, against the clients the other tests use, rather than against itself.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from capplan.executor import golden_wire
from capplan.executor.client import Client, _litellm_completion
from capplan.executor.errors import ApiTimeoutError, ProviderRateLimitError
from capplan.executor.plan import LoopKnobs, Plan
from tests.fake_provider import (
    FakeProvider,
    Reply,
    Request,
    agent,
    agent_completion,
    chat_completion,
    drip_body,
    endless,
    error_answer,
    every_nth,
    on_body,
    rate_limited,
    raw,
    responses_object,
    sse,
    stateless_agent,
    unscripted,
)

ROOT = Path(__file__).resolve().parents[1]
GPT4O = Plan.load(ROOT / "golden" / "plans" / "gpt-4o.json")
CONVERSATION = golden_wire.conversations(ROOT)["dict_map_tools"]
ENV = {"OPENAI_API_KEY": "sk-fake-provider-test"}


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    logger = logging.getLogger("capplan")
    before = logger.level
    logger.setLevel(logging.CRITICAL)  # the retries these tests provoke are not what they read
    yield
    logger.setLevel(before)


def client(fake: FakeProvider, plan: Plan = GPT4O, **kwargs: Any) -> Client:
    return Client(plan, env=ENV, api_base=fake.base, sleep=lambda s: None, **kwargs)


# --- defaults and recording --------------------------------------------------------------------------


def test_the_defaults_answer_chat_responses_and_the_catalog(fake_provider: FakeProvider) -> None:
    with httpx.Client(base_url=fake_provider.base, timeout=10) as http:
        chat = http.post("/chat/completions", json={"model": "m-1", "messages": []})
        responses = http.post("/responses", json={"model": "m-2", "input": "hi"})
        unlisted = http.get("/models")
        fake_provider.catalog = ["a", "b"]
        listed = http.get("/models")
        fake_provider.catalog = []
        refused = http.get("/models")
        elsewhere = http.post("/embeddings", json={})
    assert chat.status_code == 200 and chat.json() == chat_completion(model="m-1")
    assert responses.status_code == 200 and responses.json() == responses_object(model="m-2")
    assert unlisted.status_code == 404
    assert [m["id"] for m in listed.json()["data"]] == ["a", "b"]
    assert refused.status_code == 404
    assert elsewhere.status_code == 404
    assert "no answer for POST /v1/embeddings" in elsewhere.json()["error"]["message"]


def test_every_request_is_recorded_as_it_arrived(fake_provider: FakeProvider) -> None:
    body = b'{"model": "m",  "messages": []}'  # the spacing survives in ``raw``
    with httpx.Client(timeout=10) as http:
        http.post(fake_provider.base + "/chat/completions?x=1", content=body,
                  headers={"Authorization": "Bearer sk-1", "X-Trace": "t"})
        http.post(fake_provider.base + "/chat/completions", content=b"{not json")
        http.get(fake_provider.root + "/health")
    first, junk, get = fake_provider.requests
    assert (first.method, first.path, first.raw, first.body) == (
        "POST", "/v1/chat/completions?x=1", body, {"model": "m", "messages": []})
    assert first.headers["authorization"] == "Bearer sk-1" and first.headers["x-trace"] == "t"
    assert (junk.raw, junk.body) == (b"{not json", None)
    assert (get.method, get.path, get.raw) == ("GET", "/health", b"")
    assert [r.number for r in fake_provider.requests] == [1, 2, 3]
    assert fake_provider.last() is get and fake_provider.count == 3
    assert fake_provider.posts("chat") == [first, junk] and fake_provider.bodies() == [first.body, None]
    fake_provider.reset()
    assert fake_provider.requests == [] and fake_provider.count == 3  # the count is never reset


def test_capplan_and_litellm_send_the_same_body_to_it(fake_provider: FakeProvider,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("OPENAI_API_KEY", ENV["OPENAI_API_KEY"])  # the openai SDK under litellm reads the environment
    direct = client(fake_provider).generate(CONVERSATION)
    via_litellm = client(fake_provider, completion=_litellm_completion()).generate(CONVERSATION)
    assert direct.text == via_litellm.text == "ok"
    sent = [r.body for r in fake_provider.requests]
    assert len(sent) == 2 and sent[0] == sent[1] and sent[0]["model"] == "gpt-4o"


# --- scripts -----------------------------------------------------------------------------------------


def test_the_queue_answers_first_then_the_responder_then_the_defaults() -> None:
    def responder(request: Request) -> Reply | None:
        return Reply(chat_completion("from the responder")) if request.number == 2 else None

    with FakeProvider(responder) as fake, httpx.Client(base_url=fake.base, timeout=10) as http:
        fake.queue(chat_completion("queued"))
        texts = [http.post("/chat/completions", json={}).json()["choices"][0]["message"]["content"]
                 for _ in range(3)]
    assert texts == ["queued", "from the responder", "ok"]


def test_a_get_never_takes_a_queued_answer(fake_provider: FakeProvider) -> None:
    fake_provider.queue(chat_completion("for the call"))
    with httpx.Client(base_url=fake_provider.base, timeout=10) as http:
        listing = http.get("/models")
        call = http.post("/chat/completions", json={})
    assert listing.status_code == 404
    assert call.json()["choices"][0]["message"]["content"] == "for the call"


def test_a_queued_body_may_be_a_function_of_the_request(fake_provider: FakeProvider) -> None:
    fake_provider.queue(lambda request: {"echo": request.body}, status=201, headers={"X-Echo": "1"}, times=2)
    with httpx.Client(base_url=fake_provider.base, timeout=10) as http:
        answers = [http.post("/chat/completions", json={"n": n}) for n in (1, 2)]
    assert [(a.status_code, a.headers["x-echo"], a.json()) for a in answers] == [
        (201, "1", {"echo": {"n": 1}}), (201, "1", {"echo": {"n": 2}})]


def test_script_replaces_the_queue_and_forgets_the_record(fake_provider: FakeProvider) -> None:
    with httpx.Client(base_url=fake_provider.base, timeout=10) as http:
        fake_provider.queue(chat_completion("stale"))
        http.post("/chat/completions", json={})
        fake_provider.queue(chat_completion("stale"))
        fake_provider.script(Reply(chat_completion("fresh")))
        text = http.post("/chat/completions", json={}).json()["choices"][0]["message"]["content"]
    assert text == "fresh" and len(fake_provider.requests) == 1


def test_routes_answer_by_the_end_of_the_path(fake_provider: FakeProvider) -> None:
    fake_provider.routes[":generateContent"] = {"candidates": []}
    fake_provider.routes["/v1/messages"] = Reply({"type": "error"}, 529)
    with httpx.Client(base_url=fake_provider.root, timeout=10) as http:
        gemini = http.post("/v1beta/models/g:generateContent", json={})
        anthropic = http.post("/v1/messages", json={})
        chat = http.post("/v1/chat/completions", json={"model": "m"})
    assert (gemini.status_code, gemini.json()) == (200, {"candidates": []})
    assert (anthropic.status_code, anthropic.json()) == (529, {"type": "error"})
    assert chat.json() == chat_completion(model="m")  # no route: the default


def test_unscripted_fails_a_request_nothing_was_queued_for() -> None:
    with FakeProvider(unscripted) as fake, httpx.Client(base_url=fake.base, timeout=10) as http:
        answer = http.post("/chat/completions", json={})
    assert answer.status_code == 500 and "no answer scripted for POST /v1/chat/completions" in answer.text


def test_the_stateless_agent_calls_a_tool_then_answers_in_text() -> None:
    tools = [{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}]
    first = {"model": "m", "tools": tools, "messages": [{"role": "user", "content": "hi"}]}
    with FakeProvider(stateless_agent) as fake, httpx.Client(base_url=fake.base, timeout=10) as http:
        call = http.post("/chat/completions", json=first).json()
        again = http.post("/chat/completions", json=first).json()
        tool_turn = {**first, "messages": [*first["messages"], {"role": "tool", "content": "3"}]}
        text = http.post("/chat/completions", json=tool_turn).json()
    assert call == again  # a function of the request alone
    assert call["choices"][0]["message"]["tool_calls"][0]["function"] == {"name": "add", "arguments": '{"amount": 2}'}
    assert text["choices"][0]["message"]["content"] == "Done after 2 messages."


def test_a_responder_may_answer_status_and_body_and_read_only_the_body() -> None:
    def respond(body: dict[str, Any]) -> tuple[int, Any] | None:
        if body.get("refuse"):
            return error_answer(400, "refused", "bad_thing")
        if body.get("html"):
            return 502, b"<html>bad gateway</html>", "text/html"
        return None  # the default

    with FakeProvider(on_body(respond)) as fake, httpx.Client(base_url=fake.base, timeout=10) as http:
        refused = http.post("/chat/completions", json={"refuse": True})
        html = http.post("/chat/completions", json={"html": True})
        fine = http.post("/chat/completions", json={"model": "m"})
    assert (refused.status_code, refused.json()) == (
        400, {"error": {"message": "refused", "type": "invalid_request_error", "code": "bad_thing"}})
    assert (html.status_code, html.headers["content-type"], html.content) == (502, "text/html", b"<html>bad gateway</html>")
    assert fine.json() == chat_completion(model="m")


def test_a_named_fake_says_its_name_and_can_tag_every_answer() -> None:
    fake = FakeProvider(name="A", answer_headers=lambda r: {"x-generation-id": f"gen-{r.number}"}).start()
    try:
        with httpx.Client(base_url=fake.base, timeout=10) as http:
            first = http.post("/chat/completions", json={"model": "m-1"})
            fake.queue_error(503, "busy", times=1)
            second = http.post("/chat/completions", json={"model": "m-2"})
        fake.responder = Reply({"x": 1})
        fake.catalog = ["m"]
        fake.reset(scripts=True)  # the responder and the catalog go too
        assert (fake.responder, fake.catalog, fake.requests) == (None, None, [])
    finally:
        fake.close()
    assert first.json()["choices"][0]["message"]["content"] == "A:m-1"
    assert [a.headers["x-generation-id"] for a in (first, second)] == ["gen-1", "gen-2"]
    assert second.status_code == 503 and second.json()["error"]["message"] == "busy"


def test_every_nth_request_gets_the_fault() -> None:
    with FakeProvider(every_nth(3, rate_limited("1"), agent)) as fake, httpx.Client(base_url=fake.base, timeout=10) as http:
        statuses = [http.post("/chat/completions", json={"messages": []}).status_code for _ in range(6)]
        assert fake.models() == [None] * 6
    assert statuses == [200, 200, 429, 200, 200, 429]


def test_the_agent_calls_the_first_tool_then_answers_in_text() -> None:
    tools = [{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}]
    user = {"tools": tools, "messages": [{"role": "user", "content": "hi"}]}
    with FakeProvider(agent) as fake, httpx.Client(base_url=fake.base, timeout=10) as http:
        call = http.post("/chat/completions", json=user).json()
        text = http.post("/chat/completions", json={**user, "messages": [*user["messages"], {"role": "tool"}]}).json()
    assert call == agent_completion(None, [{"id": "call_1", "type": "function",
                                            "function": {"name": "add", "arguments": '{"amount": 1}'}}])
    assert text == agent_completion("done after 2 messages")


# --- faults ------------------------------------------------------------------------------------------


def test_a_429_with_retry_after_is_retried_by_capplan(fake_provider: FakeProvider) -> None:
    fake_provider.queue(rate_limited("0"))
    result = client(fake_provider).generate(CONVERSATION)
    assert result.text == "ok" and len(fake_provider.requests) == 2


def test_a_429_every_time_ends_in_a_rate_limit_error() -> None:
    with FakeProvider(rate_limited("0")) as fake, pytest.raises(ProviderRateLimitError):
        client(fake).generate(CONVERSATION)
    assert len(fake.requests) > 1  # retried before giving up


def test_status_error_body_and_headers_reach_the_client(fake_provider: FakeProvider) -> None:
    fake_provider.queue({"error": {"message": "down"}}, status=503, headers={"Retry-After": "7"})
    with httpx.Client(base_url=fake_provider.base, timeout=10) as http:
        answer = http.post("/chat/completions", json={})
    assert (answer.status_code, answer.headers["retry-after"], answer.json()) == (503, "7", {"error": {"message": "down"}})


def test_raw_bytes_are_sent_as_they_are(fake_provider: FakeProvider) -> None:
    fake_provider.queue(raw(b'{"id": "x", "choi', {"X-Raw": "yes"}, status=200))
    with httpx.Client(base_url=fake_provider.base, timeout=10) as http:
        answer = http.post("/chat/completions", json={})
    assert (answer.content, answer.headers["x-raw"]) == (b'{"id": "x", "choi', "yes")


def test_a_dropped_connection_and_a_cut_short_body_are_transport_errors(fake_provider: FakeProvider) -> None:
    fake_provider.queue(Reply(drop=True))
    fake_provider.queue(Reply(chat_completion("x" * 1000), cut_short=True))
    with httpx.Client(base_url=fake_provider.base, timeout=10) as http:
        with pytest.raises(httpx.RemoteProtocolError):
            http.post("/chat/completions", json={})
        with pytest.raises(httpx.RemoteProtocolError):
            http.post("/chat/completions", json={})
    assert len(fake_provider.requests) == 2


def test_an_endless_body_is_cut_by_the_client_and_stopped_by_the_fake() -> None:
    with FakeProvider(endless) as fake, httpx.Client(base_url=fake.base, timeout=10) as http:
        with http.stream("POST", "/chat/completions", json={}) as answer:
            read = 0
            for chunk in answer.iter_bytes():
                read += len(chunk)
                if read > 1024 * 1024:
                    break
    assert read > 1024 * 1024


def test_a_dripped_body_outlasts_a_read_timeout_but_not_the_attempts_deadline() -> None:
    # one byte every 0.5 s never lets a per-read timeout fire; capplan's per-attempt timeout ends it
    plan = GPT4O.model_copy(update={"loop": LoopKnobs(api_call_timeout_s=1.0)})
    with FakeProvider(drip_body) as fake, pytest.raises(ApiTimeoutError):
        client(fake, plan, timeout_retries=0).generate(CONVERSATION)


def test_a_held_answer_waits_for_its_event() -> None:
    released = threading.Event()
    with FakeProvider(Reply(chat_completion("late"), held_until=released)) as fake:
        with httpx.Client(base_url=fake.base, timeout=0.2) as http, pytest.raises(httpx.ReadTimeout):
            http.post("/chat/completions", json={})
        released.set()
        with httpx.Client(base_url=fake.base, timeout=10) as http:
            assert http.post("/chat/completions", json={}).json()["choices"][0]["message"]["content"] == "late"


def test_hold_after_holds_later_requests_until_release(fake_provider: FakeProvider) -> None:
    fake_provider.hold_after(1)
    answers: list[int] = []

    def post() -> None:
        with httpx.Client(base_url=fake_provider.base, timeout=60) as http:
            answers.append(http.post("/chat/completions", json={}).status_code)

    post()
    waiting = threading.Thread(target=post)
    waiting.start()
    for _ in range(600):  # the held request is counted as soon as it arrives; bounded at 30 s
        if fake_provider.held() == 1:
            break
        threading.Event().wait(0.05)
    assert fake_provider.held() == 1 and answers == [200]
    fake_provider.release()
    waiting.join(timeout=30)
    assert answers == [200, 200] and fake_provider.held() == 0


def test_a_redirect_is_followed_by_a_client_that_follows(fake_provider: FakeProvider) -> None:
    fake_provider.queue(Reply(None, 307, {"Location": fake_provider.base + "/chat/completions"}))
    with httpx.Client(base_url=fake_provider.base, timeout=10, follow_redirects=True) as http:
        answer = http.post("/old", json={"model": "m"})
    assert answer.json() == chat_completion(model="m")
    assert [r.path for r in fake_provider.requests] == ["/v1/old", "/v1/chat/completions"]


def test_a_stream_is_server_sent_events(fake_provider: FakeProvider) -> None:
    fake_provider.queue(sse([{"n": 1}, {"n": 2}]))
    with httpx.Client(base_url=fake_provider.base, timeout=10) as http:
        answer = http.post("/chat/completions", json={"stream": True})
    assert answer.headers["content-type"] == "text/event-stream"
    data = [line[len("data: "):] for line in answer.text.splitlines() if line.startswith("data: ")]
    assert [json.loads(d) for d in data[:-1]] == [{"n": 1}, {"n": 2}] and data[-1] == "[DONE]"


def test_it_stops_with_its_block() -> None:
    with FakeProvider() as fake:
        port = fake.port
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass
