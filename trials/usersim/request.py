"""Turn the shared transcript into the simulator's private request.

The simulator converses from the customer's seat, so the transcript is seen mirrored: its
own past ``user`` turns replay as ``assistant`` and the agent's ``assistant`` turns as
``user``. What it sends must lead with a user-role turn and end on a user-role turn it can
answer; anything else is either a prefill the provider would continue or a request that
cannot be dispatched, so it is refused here rather than improvised around.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from capplan.trials.usersim.contract import Message

SIMULATOR_GREETING = "Hi! How can I help you today?"
"""The agent-side line that opens every simulator request starting on the simulator's turn.

For a bootstrapped opening it is the greeting actually sent to the simulator at turn 0; for a
caller-seeded opening it stands in for one. It lives only in the simulator's request, never
in the shared transcript.
"""

# Roles that carry no dialogue for the simulator: the agent's own system prompt and the
# plumbing of its tool use. Anything outside these and user/assistant is refused.
_NON_DIALOGUE_ROLES = frozenset({"system", "developer", "tool", "function"})
_FLIPPED_ROLE = {"user": "assistant", "assistant": "user"}

# Adjacent same-role turns are joined with a blank line so neither turn's words run into
# the other's; the words themselves are never altered.
_COALESCE_SEPARATOR = "\n\n"


class UnanswerableTranscript(RuntimeError):
    """The transcript gives the simulator nothing it could answer.

    Raised instead of sending a request that ends on the simulator's own turn (a prefill the
    provider would continue) or an empty one. A trial that hits it ends as an error.
    """


def dialogue_text(message: Mapping[str, Any], *, index: int) -> str | None:
    """The dialogue words a message carries, or ``None`` when it carries none.

    Tool-call-only turns (``content`` None or empty), whitespace-only replies and content
    parts that are not text carry no dialogue. Text parts of a multi-part content list are
    joined with newlines. A content value of any other type is refused, naming its index.
    """
    content = message.get("content")
    if content is None:
        return None
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        parts: list[str] = []
        for part_index, part in enumerate(content):
            if not isinstance(part, Mapping):
                raise TypeError(
                    f"transcript[{index}].content[{part_index}] is a {type(part).__name__}; "
                    "expected a content-part object such as {'type': 'text', 'text': ...}"
                )
            if part.get("type") == "text":
                part_text = part.get("text")
                if not isinstance(part_text, str):
                    raise TypeError(
                        f"transcript[{index}].content[{part_index}].text is "
                        f"{type(part_text).__name__}; expected str"
                    )
                parts.append(part_text)
        text = "\n".join(parts)
    else:
        raise TypeError(
            f"transcript[{index}].content is a {type(content).__name__}; "
            "expected str, a list of content parts, or None"
        )
    return text if text.strip() else None


def _role(message: Mapping[str, Any], *, index: int) -> str:
    role = message.get("role")
    if not isinstance(role, str):
        raise ValueError(f"transcript[{index}] has no string 'role' (got {role!r})")
    if role not in _FLIPPED_ROLE and role not in _NON_DIALOGUE_ROLES:
        expected = sorted({*_FLIPPED_ROLE, *_NON_DIALOGUE_ROLES})
        raise ValueError(
            f"transcript[{index}] has unknown role {role!r}; expected one of {expected}"
        )
    return role


def flip_transcript(transcript: Sequence[Mapping[str, Any]]) -> list[Message]:
    """The transcript seen from the simulator's seat: roles swapped, dialogue only, coalesced.

    Turns without dialogue text are skipped, then adjacent turns of the same (flipped) role
    are joined so the result alternates strictly. No turn is trimmed, including the
    simulator's own opening: dropping it makes the model believe it never asked.
    """
    flipped: list[Message] = []
    for index, message in enumerate(transcript):
        role = _role(message, index=index)
        if role in _NON_DIALOGUE_ROLES:
            continue
        text = dialogue_text(message, index=index)
        if text is None:
            continue
        new_role = _FLIPPED_ROLE[role]
        if flipped and flipped[-1]["role"] == new_role:
            flipped[-1]["content"] = f"{flipped[-1]['content']}{_COALESCE_SEPARATOR}{text}"
        else:
            flipped.append({"role": new_role, "content": text})
    return flipped


def build_request(
    transcript: Sequence[Mapping[str, Any]], *, greeting: str = SIMULATOR_GREETING
) -> list[Message]:
    """The messages the simulator sends for its next turn.

    Leads with a user-role turn (``greeting`` prepended whenever the flipped context starts
    on the simulator's own turn) and ends on the agent's last dialogue turn. Raises
    :class:`UnanswerableTranscript` when the agent's last turn carries no dialogue text, when
    the simulator spoke last, or when there is no dialogue at all. The input is not modified.
    """
    if not greeting.strip():
        raise ValueError("the simulator greeting is blank; a blank opening turn cannot be sent")
    last_agent_index = _last_agent_index(transcript)
    if last_agent_index is None:
        raise UnanswerableTranscript(
            "the transcript has no agent turn to answer; open the conversation with "
            "UserSimulator.open() instead of reply()"
        )
    if dialogue_text(transcript[last_agent_index], index=last_agent_index) is None:
        raise UnanswerableTranscript(
            f"the agent's last turn (transcript[{last_agent_index}]) carries no dialogue text, "
            "so there is nothing for the simulated user to answer"
        )
    flipped = flip_transcript(transcript)
    if flipped[-1]["role"] != "user":
        raise UnanswerableTranscript(
            "the simulated user spoke after the agent's last dialogue turn; a request ending "
            "on its own turn would be continued as a prefill instead of answered"
        )
    if flipped[0]["role"] == "assistant":
        flipped.insert(0, {"role": "user", "content": greeting})
    return flipped


def opening_request(*, greeting: str = SIMULATOR_GREETING) -> list[Message]:
    """The request that bootstraps the simulator's opening turn: the greeting alone."""
    if not greeting.strip():
        raise ValueError("the simulator greeting is blank; a blank opening turn cannot be sent")
    return [{"role": "user", "content": greeting}]


def _last_agent_index(transcript: Sequence[Mapping[str, Any]]) -> int | None:
    for index in range(len(transcript) - 1, -1, -1):
        if _role(transcript[index], index=index) == "assistant":
            return index
    return None
