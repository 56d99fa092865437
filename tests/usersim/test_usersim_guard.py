"""UserReplyGuard: discard whole and regenerate, record every discard, refuse without quoting."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from capplan.trials.usersim.detectors import EXCERPT_LIMIT, Finding, ScratchpadDetector
from capplan.trials.usersim.guard import (
    DEFAULT_REPLY_DETECTORS,
    LOGGER_NAME,
    USER_REPLY_MAX_ATTEMPTS,
    GuardEvent,
    ReplyDefect,
    UserReplyGuard,
    UserReplyRefused,
    reason_codes,
)

BREAKS_FRAME = "As an AI language model, I cannot tell you my account number."
LEAKS = "I should sound upset.\n</think>\nWhere is my refund?"
CLEAN = "Where is my refund? It has been two weeks."


@dataclass(frozen=True)
class Gen:
    text: str


class Scripted:
    """A generate callable that replays texts (or raises exceptions) in order."""

    def __init__(self, *items: str | Exception) -> None:
        self._items: Iterator[str | Exception] = iter(items)
        self.calls = 0

    def __call__(self) -> Gen:
        self.calls += 1
        item = next(self._items)
        if isinstance(item, Exception):
            raise item
        return Gen(item)


def enforce(
    guard: UserReplyGuard,
    generate: Callable[[], Gen],
    events: list[GuardEvent] | None = None,
    message_index: int = 4,
) -> tuple[Gen, tuple[ReplyDefect, ...], GuardEvent | None]:
    sink = events.append if events is not None else None
    result = guard.enforce(
        generate, trial_id="trial-42", message_index=message_index, record_event=sink
    )
    return result.generation, result.rejections, result.event


def test_default_detectors_and_order() -> None:
    assert [d.name for d in DEFAULT_REPLY_DETECTORS] == ["fourth_wall", "scratchpad", "assistant_voice"]
    assert USER_REPLY_MAX_ATTEMPTS >= 2
    assert LOGGER_NAME == "capplan.user_reply_guard"


def test_a_clean_first_generation_is_delivered_without_an_event() -> None:
    generate = Scripted(CLEAN)
    events: list[GuardEvent] = []
    generation, rejections, event = enforce(UserReplyGuard(), generate, events)
    assert generation.text == CLEAN
    assert rejections == ()
    assert event is None
    assert events == []
    assert generate.calls == 1


def test_a_flagged_reply_is_discarded_whole_and_regenerated(
    caplog: pytest.LogCaptureFixture,
) -> None:
    generate = Scripted(BREAKS_FRAME, CLEAN)
    events: list[GuardEvent] = []
    with caplog.at_level(logging.WARNING, logger=LOGGER_NAME):
        generation, rejections, event = enforce(UserReplyGuard(), generate, events)
    assert generation.text == CLEAN  # the second generation, untouched
    assert generate.calls == 2
    assert rejections == (
        ReplyDefect("fourth_wall", "self_identified_as_model", "As an AI language model, I"),
    )
    assert event == GuardEvent(4, "delivered", rejections)
    assert events == [event]
    assert event.to_record() == {
        "message_index": 4,
        "outcome": "delivered",
        "rejections": [
            {
                "detector": "fourth_wall",
                "reason": "self_identified_as_model",
                "excerpt": "As an AI language model, I",
            }
        ],
    }
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    record = warnings[0]
    assert record.name == LOGGER_NAME
    message = record.getMessage()
    for needle in (
        "trial_id=trial-42",
        "detector=fourth_wall",
        "reason=self_identified_as_model",
        "As an AI language model, I",
        "attempt=1/3",
        "message_index=4",
    ):
        assert needle in message
    assert record.__dict__["trial_id"] == "trial-42"
    assert record.__dict__["excerpt"] == "As an AI language model, I"


def test_every_discard_is_logged_and_carried(caplog: pytest.LogCaptureFixture) -> None:
    generate = Scripted(BREAKS_FRAME, LEAKS, CLEAN)
    with caplog.at_level(logging.WARNING, logger=LOGGER_NAME):
        _, rejections, event = enforce(UserReplyGuard(), generate)
    assert reason_codes(rejections) == [
        "fourth_wall:self_identified_as_model",
        "scratchpad:think_tag",
    ]
    assert rejections[1].excerpt == "</think>\nWhere is my refund?"
    assert event is not None and event.outcome == "delivered"
    assert sum(r.levelno == logging.WARNING for r in caplog.records) == 2


def test_refusal_after_max_attempts_quotes_none_of_the_reply(
    caplog: pytest.LogCaptureFixture,
) -> None:
    leaky = "I'm an AI built on OpenAI and Anthropic models, so no account."
    generate = Scripted(leaky, "<think>\nplan: mention Azure rate limits", leaky)
    events: list[GuardEvent] = []
    with (
        caplog.at_level(logging.WARNING, logger=LOGGER_NAME),
        pytest.raises(UserReplyRefused) as caught,
    ):
        enforce(UserReplyGuard(), generate, events, message_index=9)
    exc = caught.value
    message = str(exc)
    assert "3 generation attempts" in message
    assert "fourth_wall" in message and "scratchpad" in message
    assert "fourth_wall:self_identified_as_model" in message
    assert "scratchpad:think_tag" in message
    for leaked in ("OpenAI", "Anthropic", "Azure", "rate limit", "I'm an AI", "think>"):
        assert leaked not in message
    assert exc.args == (message,)
    assert exc.attempts == 3
    assert generate.calls == 3
    assert exc.event == GuardEvent(9, "refused", exc.rejections)
    # The refused event is recorded before the exception leaves the guard.
    assert events == [exc.event]
    assert sum(r.levelno == logging.WARNING for r in caplog.records) == 3
    assert isinstance(exc, RuntimeError)


def test_max_attempts_is_respected() -> None:
    generate = Scripted(BREAKS_FRAME)
    with pytest.raises(UserReplyRefused, match="all 1 generation attempts"):
        enforce(UserReplyGuard(max_attempts=1), generate)
    assert generate.calls == 1


def test_provider_failure_after_discards_carries_the_reason_codes() -> None:
    failure = ConnectionError("upstream 503")
    generate = Scripted(BREAKS_FRAME, LEAKS, failure)
    with pytest.raises(ConnectionError) as caught:
        enforce(UserReplyGuard(), generate)
    assert caught.value is failure
    assert str(caught.value) == "upstream 503"
    notes = caught.value.__notes__
    assert len(notes) == 1
    assert "2 generation attempt(s) were discarded" in notes[0]
    assert "fourth_wall:self_identified_as_model, scratchpad:think_tag" in notes[0]
    assert "As an AI" not in notes[0]


def test_provider_failure_without_discards_is_untouched() -> None:
    failure = TimeoutError("slow")
    with pytest.raises(TimeoutError) as caught:
        enforce(UserReplyGuard(), Scripted(failure))
    assert not hasattr(caught.value, "__notes__")


def test_first_detector_to_flag_owns_the_reply() -> None:
    both = "<think>\nAs an AI, I should stay polite."
    default = UserReplyGuard().inspect(both)
    assert default is not None and default.code == "fourth_wall:self_identified_as_model"
    reordered = UserReplyGuard([ScratchpadDetector(), DEFAULT_REPLY_DETECTORS[0]]).inspect(both)
    assert reordered is not None and reordered.code == "scratchpad:think_tag"


class Shouty:
    """A custom detector: flags replies in capitals, with an oversized excerpt."""

    name = "shouty"

    def inspect(self, text: str) -> Finding | None:
        return Finding("all_caps", text * 100) if text.isupper() else None


def test_a_detector_added_at_the_end_cannot_move_an_earlier_reason() -> None:
    guard = UserReplyGuard([*DEFAULT_REPLY_DETECTORS, Shouty()])
    claimed = guard.inspect("I AM AN AI.")
    assert claimed is not None and claimed.code == "fourth_wall:self_identified_as_model"
    fresh = guard.inspect("WHERE IS MY REFUND")
    assert fresh is not None and fresh.code == "shouty:all_caps"
    assert len(fresh.excerpt) == EXCERPT_LIMIT


@pytest.mark.parametrize(
    ("detectors", "max_attempts", "match"),
    [
        (DEFAULT_REPLY_DETECTORS, 0, "at least 1"),
        ([ScratchpadDetector(), ScratchpadDetector()], 3, "duplicate reply detector name"),
    ],
)
def test_bad_construction_is_refused(
    detectors: list[ScratchpadDetector], max_attempts: int, match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        UserReplyGuard(detectors, max_attempts=max_attempts)


def test_an_unnamed_detector_is_refused() -> None:
    class Nameless(Shouty):
        name = ""

    with pytest.raises(ValueError, match="non-empty name"):
        UserReplyGuard([Nameless()])


def test_a_generation_without_string_text_is_refused() -> None:
    @dataclass(frozen=True)
    class NoText:
        text: None

    with pytest.raises(TypeError, match="reply text must be str, got NoneType"):
        UserReplyGuard().enforce(lambda: NoText(None), trial_id="t", message_index=0)  # type: ignore[type-var]


# --- bad input: deterministic, quick answers ------------------------------------------------

HUNDRED_KB = 100 * 1024

BAD_INPUTS = [
    ("empty", "", None),
    ("whitespace only", " \t\n\r\n   \u00a0\u2003\n", None),
    (
        "long benign",
        ("Where is my refund? Order 7781 was due on Monday. " * 2100)[:HUNDRED_KB],
        None,
    ),
    (
        "long, frame break at the very end",
        "x " * (HUNDRED_KB // 2) + "\nI'm an AI.",
        "fourth_wall:self_identified_as_model",
    ),
    (
        "non-ASCII",
        "Где мой возврат? \u6211\u7684\u9000\u6b3e\u5728\u54ea\u91cc\uff1f "
        "Où est mon remboursement ? \U0001f642",
        None,
    ),
    (
        "right-to-left",
        "\u05d0\u05d9\u05e4\u05d4 \u05d4\u05d4\u05d7\u05d6\u05e8 \u05e9\u05dc\u05d9? "
        "\u0623\u064a\u0646 \u0627\u0633\u062a\u0631\u062f\u0627\u062f\u064a\u061f "
        "\u202eevil\u202c",
        None,
    ),
    (
        "right-to-left around a frame break",
        "\u202bI'm an AI.\u202c",
        "fourth_wall:self_identified_as_model",
    ),
    ("only a closing think tag", "</think>", "scratchpad:think_tag"),
    ("only an opening think tag", "<think>", "scratchpad:think_tag"),
    ("only a think pair", "<think></think>", "scratchpad:think_tag"),
    ("think tag under whitespace", "\n\n   </think>   \n\n", "scratchpad:think_tag"),
    ("NUL and control characters", "refund\x00\x01\x7f please", None),
    ("lone surrogate", "refund \ud800 please", None),
]


@pytest.mark.parametrize(("label", "text", "expected"), BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_gets_a_deterministic_quick_answer(
    label: str, text: str, expected: str | None
) -> None:
    guard = UserReplyGuard()
    answers = [guard.inspect(text) for _ in range(3)]
    assert answers[0] == answers[1] == answers[2]
    assert (answers[0].code if answers[0] else None) == expected
    # quick without a clock: test_usersim_guard_speed.py bounds every detector pattern's work per
    # start position, which rules out catastrophic backtracking on any input (a wall-time bound
    # here depended on the machine's load)


def test_an_empty_reply_is_delivered_as_written() -> None:
    # No detector owns emptiness: the words the model wrote (none) are what is delivered.
    generation, rejections, event = enforce(UserReplyGuard(), Scripted(""))
    assert generation.text == ""
    assert rejections == () and event is None
