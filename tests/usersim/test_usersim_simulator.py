"""UserSimulator end to end against scripted generate callables."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import pytest

from capplan.trials.usersim import (
    SIMULATOR_GREETING,
    STOP_SIGNAL,
    GuardEvent,
    UnanswerableTranscript,
    UserReplyGuard,
    UserReplyRefused,
    UserSimulator,
    render_system_prompt,
)

BACKSTORY = "You are Ana. Your parcel 5512 is two weeks late; you want it re-sent."


@dataclass(frozen=True)
class Gen:
    text: str
    cost_usd: float = 0.001


@dataclass
class ScriptedModel:
    """Replays replies in order and records exactly what it was asked."""

    replies: list[str | Exception]
    calls: list[tuple[str, list[dict[str, Any]]]] = field(default_factory=list)

    def __call__(self, system_prompt: str, messages: list[dict[str, Any]], /) -> Gen:
        self.calls.append((system_prompt, copy.deepcopy(messages)))
        item = self.replies.pop(0)
        if isinstance(item, Exception):
            raise item
        return Gen(item)


def simulator(model: ScriptedModel, **kwargs: Any) -> UserSimulator:
    return UserSimulator(model, trial_id="trial-7", backstory=BACKSTORY, **kwargs)


def test_open_sends_the_greeting_alone_and_delivers_the_words_verbatim() -> None:
    opening = "  Hi — my parcel 5512 never arrived.\n"
    model = ScriptedModel([opening])
    reply = simulator(model).open(message_index=1)
    assert reply.text == opening
    assert reply.message_index == 1
    assert reply.guard_rejections == () and reply.guard_event is None
    system_prompt, messages = model.calls[0]
    assert system_prompt == render_system_prompt(BACKSTORY)
    assert messages == [{"role": "user", "content": SIMULATOR_GREETING}]
    assert reply.generation == Gen(opening)


def test_reply_answers_the_agent_from_the_flipped_transcript() -> None:
    transcript: list[dict[str, Any]] = [
        {"role": "system", "content": "You are Acme's support agent."},
        {"role": "user", "content": "My parcel 5512 never arrived."},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c"}]},
        {"role": "tool", "tool_call_id": "c", "content": "{}"},
        {"role": "assistant", "content": "I can re-send it. Same address?"},
    ]
    before = copy.deepcopy(transcript)
    model = ScriptedModel(["Yes, same address."])
    reply = simulator(model).reply(transcript)
    assert reply.text == "Yes, same address."
    assert reply.message_index == len(transcript)
    assert model.calls[0][1] == [
        {"role": "user", "content": SIMULATOR_GREETING},
        {"role": "assistant", "content": "My parcel 5512 never arrived."},
        {"role": "user", "content": "I can re-send it. Same address?"},
    ]
    # The greeting lives only in the private request.
    assert transcript == before


def test_explicit_message_index_is_used() -> None:
    model = ScriptedModel(["ok"])
    transcript = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]
    assert simulator(model).reply(transcript, message_index=12).message_index == 12


def test_regeneration_is_invisible_in_the_text_and_visible_in_the_record() -> None:
    events: list[GuardEvent] = []
    model = ScriptedModel(["I'm an AI, so I have no parcel.", "Yes, please re-send it."])
    reply = simulator(model, record_event=events.append).reply(
        [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Re-send it?"}]
    )
    assert reply.text == "Yes, please re-send it."
    assert [d.code for d in reply.guard_rejections] == ["fourth_wall:self_identified_as_model"]
    assert reply.guard_event == GuardEvent(2, "delivered", reply.guard_rejections)
    assert events == [reply.guard_event]
    # Both attempts saw the identical request.
    assert model.calls[0] == model.calls[1]


def test_each_attempt_gets_a_fresh_request() -> None:
    class Mutating(ScriptedModel):
        def __call__(self, system_prompt: str, messages: list[dict[str, Any]], /) -> Gen:
            result = super().__call__(system_prompt, messages)
            messages[0]["content"] = "tampered"
            messages.append({"role": "user", "content": "extra"})
            return result

    model = Mutating(["<think>\nplan", "Fine."])
    simulator(model).open(message_index=0)
    assert (
        model.calls[0][1] == model.calls[1][1] == [{"role": "user", "content": SIMULATOR_GREETING}]
    )


def test_refusal_records_the_event_then_raises() -> None:
    events: list[GuardEvent] = []
    model = ScriptedModel(["This is a simulation of the task."] * 3)
    sim = simulator(model, record_event=events.append)
    with pytest.raises(UserReplyRefused) as caught:
        sim.open(message_index=1)
    assert events == [caught.value.event]
    assert caught.value.event.outcome == "refused"
    assert len(caught.value.event.rejections) == 3
    assert "simulation of the task" not in str(caught.value)


def test_custom_guard_attempt_budget() -> None:
    model = ScriptedModel(["I'm an AI.", "I'm an AI.", "ok"])
    sim = simulator(model, guard=UserReplyGuard(max_attempts=2))
    with pytest.raises(UserReplyRefused, match="all 2 generation attempts"):
        sim.open(message_index=0)
    assert len(model.calls) == 2


def test_provider_failure_after_a_discard_names_the_discard() -> None:
    model = ScriptedModel(["</think>\nhello", RuntimeError("provider returned 502")])
    with pytest.raises(RuntimeError, match="provider returned 502") as caught:
        simulator(model).open(message_index=0)
    assert any("scratchpad:think_tag" in note for note in caught.value.__notes__)


def test_unanswerable_transcript_raises_before_any_generation() -> None:
    model = ScriptedModel(["should never be asked"])
    with pytest.raises(UnanswerableTranscript):
        simulator(model).reply([{"role": "user", "content": "Hi"}])
    with pytest.raises(UnanswerableTranscript):
        simulator(model).reply([])
    assert model.calls == []


def test_stop_signal() -> None:
    model = ScriptedModel([STOP_SIGNAL, "Thanks, that is all."])
    sim = simulator(model)
    transcript = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Done."}]
    assert sim.reply(transcript).stops
    assert not sim.reply(transcript).stops


def test_prompt_variants() -> None:
    model = ScriptedModel([])
    assert "Instruction:" not in UserSimulator(model, trial_id="t").system_prompt
    tools = [{"type": "function", "function": {"name": "check_signal"}}]
    with_tools = UserSimulator(model, trial_id="t", backstory=BACKSTORY, tool_schemas=tools)
    assert with_tools.system_prompt == render_system_prompt(BACKSTORY, tool_schemas=tools)


def test_trial_id_is_required() -> None:
    with pytest.raises(ValueError, match="trial_id is required"):
        UserSimulator(ScriptedModel([]), trial_id="")
