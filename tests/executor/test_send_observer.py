"""The send seam: whoever runs the executor hears of each send before it happens, and can stop it."""

from __future__ import annotations

from typing import Any

import pytest

from capplan.executor.attempts import attempts_of
from capplan.executor.client import Client
from capplan.executor.send_observer import Send, observing_sends
from tests.executor.plans import make_plan

REQUEST = {"messages": [{"role": "user", "content": "x"}]}


class _Flaky(Exception):
    status_code = 503


def test_every_attempt_is_announced_before_it_is_sent_and_names_its_request_id() -> None:
    events: list[tuple[str, Any]] = []

    def observe(send: Send) -> None:
        events.append(("send", (send.attempt, send.request_id, send.kwargs["messages"][-1]["content"])))

    def completion(**kwargs: Any) -> dict[str, Any]:
        events.append(("wire", None))
        if sum(1 for kind, _ in events if kind == "wire") < 3:
            raise _Flaky("upstream hiccup")
        return {"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}], "usage": {}}

    client = Client(make_plan(), completion=completion, sleep=lambda s: None, env={})
    with observing_sends(observe):
        result = client.generate(REQUEST)
    assert [kind for kind, _ in events] == ["send", "wire"] * 3  # each send is heard before its bytes go
    sends = [detail for kind, detail in events if kind == "send"]
    assert [attempt for attempt, _, _ in sends] == [1, 2, 3] and all(text == "x" for _, _, text in sends)
    assert [a.request_id for a in result.attempts] == [request_id for _, request_id, _ in sends]
    assert len({request_id for _, request_id, _ in sends}) == 3


def test_an_observer_that_raises_stops_the_send_and_no_attempt_is_made() -> None:
    sent: list[int] = []

    class Refused(Exception):
        pass

    def observe(send: Send) -> None:
        if send.attempt == 2:
            raise Refused("budget spent")

    def completion(**kwargs: Any) -> dict[str, Any]:
        sent.append(1)
        raise _Flaky("upstream hiccup")

    client = Client(make_plan(), completion=completion, sleep=lambda s: None, env={})
    with observing_sends(observe), pytest.raises(Refused) as raised:
        client.generate(REQUEST)
    assert sent == [1]  # the first attempt went out; the second was stopped before the wire
    assert [a.status for a in attempts_of(raised.value)] == ["error"]


def test_the_mock_provider_announces_its_one_send() -> None:
    seen: list[Send] = []
    with observing_sends(seen.append):
        result = Client(make_plan("mock", "echo"), env={}).generate(REQUEST)
    [send] = seen
    assert send.attempt == 1 and result.attempts[0].request_id == send.request_id


def test_no_observer_outside_the_block() -> None:
    seen: list[Send] = []
    with observing_sends(seen.append):
        pass
    Client(make_plan("mock", "echo"), env={}).generate(REQUEST)
    assert seen == []
