"""Assistant-text policies: passthrough, and Cohere's leaked template markers."""

from __future__ import annotations

import pytest

from capplan.executor.families.cohere import END_TEXT, START_TEXT, CohereMarkerAssistantText
from capplan.executor.plan import ModelIdentity
from capplan.executor.policies.assistant_text_policy import AssistantTextPolicy, PassthroughAssistantText

MODEL = ModelIdentity(
    key="cohere-a-plus",
    provider="azure_ai",
    name="cohere-command-a-plus-05-2026",
    model_id="azure_ai/cohere-command-a-plus-05-2026",
    wire_model="azure_ai/cohere-command-a-plus-05-2026",
)


@pytest.mark.parametrize("text", ["", "  spaced  ", "<|START_TEXT|>kept<|END_TEXT|>", "multi\nline"])
def test_passthrough_returns_the_text_unchanged(text: str) -> None:
    assert PassthroughAssistantText().parse_assistant_text(text, model=MODEL) == text


def test_both_are_policies_of_the_slot() -> None:
    for cls in (PassthroughAssistantText, CohereMarkerAssistantText):
        assert issubclass(cls, AssistantTextPolicy) and cls.slot == "assistant_text_policy"
    assert (PassthroughAssistantText.name, CohereMarkerAssistantText.name) == ("passthrough", "cohere_markers")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<|START_TEXT|>pong<|END_TEXT|>", "pong"),
        ("<|START_TEXT|>  line one\nline two \n<|END_TEXT|>", "line one\nline two"),
        ("<|START_TEXT|>a<|END_TEXT|><|START_TEXT|>b<|END_TEXT|>", "a b"),
        ("residue <|START_TEXT|>answer<|END_TEXT|> more residue", "answer"),
        ("<|START_TEXT|>cut off at the token lim", "cut off at the token lim"),
        ("stray end<|END_TEXT|>", "stray end"),
        ("<|START_TEXT|><|END_TEXT|>", ""),
    ],
)
def test_cohere_markers_are_removed(text: str, expected: str) -> None:
    assert CohereMarkerAssistantText().parse_assistant_text(text, model=MODEL) == expected


@pytest.mark.parametrize("text", ["", "  plain reply with its own spacing  ", "<|START|>other template<|END|>"])
def test_text_without_cohere_markers_is_returned_byte_for_byte(text: str) -> None:
    assert CohereMarkerAssistantText().parse_assistant_text(text, model=MODEL) == text


def test_marker_constants_are_the_wire_tokens() -> None:
    assert (START_TEXT, END_TEXT) == ("<|START_TEXT|>", "<|END_TEXT|>")
