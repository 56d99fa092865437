"""The simulator's prompt body: its shape, its four contract properties, and its version stamp."""

from __future__ import annotations

import hashlib
import json
import re
from importlib import resources
from typing import Any

import jinja2
import pytest

from capplan.trials.usersim import prompt as prompt_module
from capplan.trials.usersim.prompt import (
    RULE_COUNT,
    SIMULATOR_SCHEMA_VERSION,
    STOP_SIGNAL,
    TOOL_RULE_COUNT,
    render_system_prompt,
)
from capplan.trials.usersim.request import SIMULATOR_GREETING, build_request, opening_request

BACKSTORY = "You are Dana Reyes. Your order 7781 arrived broken and you want a refund."
TOOL = {"type": "function", "function": {"name": "toggle_airplane_mode", "parameters": {}}}

# Version -> sha256 of the canonical generation below. A change to the prompt body, the
# greeting or the request shape changes the digest; bump SIMULATOR_SCHEMA_VERSION and add
# the new digest here. Old entries stay: they are the record of what each stamp meant.
PINNED_GENERATIONS = {
    1: "4726a1248e7c5c43dc10b4c6e0ca37f9f5b1b96348a7f1a07cfb905fcd04b658",
}


def canonical_generation() -> str:
    """Every rendering the stamp covers, as one canonical JSON document."""
    seeded: list[dict[str, Any]] = [
        {"role": "system", "content": "agent system prompt"},
        {"role": "user", "content": "My order arrived broken."},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c"}]},
        {"role": "tool", "tool_call_id": "c", "content": "{}"},
        {"role": "assistant", "content": "Sorry about that."},
        {"role": "assistant", "content": "Would you like a refund?"},
    ]
    agent_first = [
        {"role": "assistant", "content": "Hello, how can I help?"},
        {"role": "user", "content": "Refund, please."},
        {"role": "assistant", "content": "Done."},
    ]
    parts = {
        "prompt/none": render_system_prompt(None),
        "prompt/backstory": render_system_prompt(BACKSTORY),
        "prompt/none+tools": render_system_prompt(None, tool_schemas=[TOOL]),
        "prompt/backstory+tools": render_system_prompt(BACKSTORY, tool_schemas=[TOOL]),
        "greeting": SIMULATOR_GREETING,
        "stop_signal": STOP_SIGNAL,
        "request/opening": opening_request(),
        "request/seeded": build_request(seeded),
        "request/agent_first": build_request(agent_first),
    }
    return json.dumps(parts, sort_keys=True, ensure_ascii=False, indent=1)


def generation_digest() -> str:
    return hashlib.sha256(canonical_generation().encode("utf-8")).hexdigest()


def test_schema_version_is_stamped_with_this_generation() -> None:
    digest = generation_digest()
    assert SIMULATOR_SCHEMA_VERSION in PINNED_GENERATIONS, (
        f"SIMULATOR_SCHEMA_VERSION {SIMULATOR_SCHEMA_VERSION} has no pinned generation; add "
        f"{SIMULATOR_SCHEMA_VERSION}: {digest!r} to PINNED_GENERATIONS"
    )
    assert PINNED_GENERATIONS[SIMULATOR_SCHEMA_VERSION] == digest, (
        "the simulator prompt body, greeting or request shape changed without a "
        f"SIMULATOR_SCHEMA_VERSION bump: set it to {max(PINNED_GENERATIONS) + 1} and add "
        f"{max(PINNED_GENERATIONS) + 1}: {digest!r} to PINNED_GENERATIONS"
    )


def test_each_version_names_a_different_generation() -> None:
    digests = list(PINNED_GENERATIONS.values())
    assert len(set(digests)) == len(digests)
    assert sorted(PINNED_GENERATIONS) == list(range(1, max(PINNED_GENERATIONS) + 1))
    assert max(PINNED_GENERATIONS) == SIMULATOR_SCHEMA_VERSION


def test_a_one_word_edit_to_the_body_changes_the_stamped_digest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The check above can only fail if an edit moves the digest; prove that it does.
    original = prompt_module._template()
    source = resources.files("capplan.trials.usersim").joinpath("prompt.j2").read_text("utf-8")
    edited = jinja2.Environment(
        autoescape=False,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    ).from_string(source.replace("Keep each message short", "Keep each message brief"))
    before = generation_digest()
    monkeypatch.setattr(prompt_module, "_template", lambda: edited)
    assert generation_digest() != before
    monkeypatch.setattr(prompt_module, "_template", lambda: original)
    assert generation_digest() == before


def rules(body: str) -> list[str]:
    block = body.split("\nRules:\n", 1)[1]
    return [line for line in block.splitlines() if line.strip()]


def test_shape_without_backstory() -> None:
    body = render_system_prompt(None)
    assert "Instruction:" not in body
    opening, rest = body.split("\n", 1)
    assert opening.startswith("You are a person who has contacted a support agent")
    assert rest.startswith("\nRules:\n")
    assert len(rules(body)) == RULE_COUNT == 12


def test_shape_with_backstory() -> None:
    body = render_system_prompt(BACKSTORY)
    assert body.count("Instruction:") == 1
    assert f"\n\nInstruction:\n{BACKSTORY}\n\nRules:\n" in body
    assert body.index("Instruction:") < body.index("Rules:")
    assert len(rules(body)) == RULE_COUNT


def test_opening_line_is_fixed() -> None:
    openings = {
        render_system_prompt(backstory, tool_schemas=tools).split("\n", 1)[0]
        for backstory in (None, BACKSTORY, "Something else entirely.")
        for tools in ((), [TOOL])
    }
    assert len(openings) == 1


def test_tool_rules_only_with_tool_schemas() -> None:
    without = rules(render_system_prompt(BACKSTORY))
    with_tools = rules(render_system_prompt(BACKSTORY, tool_schemas=[TOOL]))
    assert len(with_tools) == RULE_COUNT + TOOL_RULE_COUNT == 16
    assert with_tools[:RULE_COUNT] == without
    assert "tool" in " ".join(with_tools[RULE_COUNT:]).lower()
    assert "tool" not in " ".join(without).lower()


def test_rules_are_numbered_in_order() -> None:
    listed = rules(render_system_prompt(None, tool_schemas=[TOOL]))
    assert [int(line.split(".", 1)[0]) for line in listed] == list(range(1, 17))


def test_backstory_is_inserted_verbatim() -> None:
    tricky = "Say {{ not a variable }} & <b>keep</b> 100% of it.\nSecond line."
    assert f"Instruction:\n{tricky}\n" in render_system_prompt(tricky)


@pytest.mark.parametrize("blank", ["", " ", "\n\t"])
def test_a_blank_backstory_is_refused_not_guessed(blank: str) -> None:
    with pytest.raises(ValueError, match="pass None"):
        render_system_prompt(blank)


# --- the four contract properties ---------------------------------------------------------


def test_rule_one_puts_the_instruction_above_every_rule() -> None:
    first = rules(render_system_prompt(BACKSTORY))[0]
    assert first.startswith("1. The Instruction")
    assert "outranks every rule below" in first
    for topic in ("share", "word", "order"):
        assert topic in first


def test_the_simulator_does_not_correct_the_agent() -> None:
    body = render_system_prompt(BACKSTORY)
    rule = next(line for line in rules(body) if "Do not correct the agent" in line)
    assert "restate a requirement the agent got wrong" in rule
    assert "reject an alternative the agent offers" in rule
    assert "supervise" in rule
    # Pushback is the task's to author, not a default.
    assert "Push back only where the Instruction tells you to" in rule


def test_termination_is_outcome_based() -> None:
    body = render_system_prompt(BACKSTORY)
    rule = next(line for line in rules(body) if STOP_SIGNAL in line)
    assert "every part of your request has reached an outcome" in rule
    assert "carried out or turned down by the agent" in rule
    assert "An outcome you did not want still counts" in rule


FRAME_WORDS = re.compile(
    r"\b(?:simulat\w*|role-?play\w*|test\w*|benchmark\w*|evaluat\w*|prompt\w*|AI|model\w*"
    r"|bot|assistant|frame)\b",
    re.IGNORECASE,
)


@pytest.mark.parametrize("backstory", [None, BACKSTORY])
@pytest.mark.parametrize("tools", [(), (TOOL,)])
def test_the_frame_is_named_only_to_forbid_it(
    backstory: str | None, tools: tuple[dict[str, object], ...]
) -> None:
    body = render_system_prompt(backstory, tool_schemas=tools)
    backstory_free = body.replace(backstory, "") if backstory else body
    frame_lines = [line for line in backstory_free.splitlines() if FRAME_WORDS.search(line)]
    assert len(frame_lines) == 1, frame_lines
    rule = frame_lines[0]
    assert rule.startswith("12. Never step outside the conversation: do not mention")
    for word in ("simulation", "test", "benchmark", "prompt"):
        assert word in rule
    assert "never describe yourself as an AI, a language model" in rule
