"""The agent's tool calls as it sent them, per user turn and per completion, read from a trajectory.

A user turn starts at each user message the scripted user spoke (harness-authored user messages,
such as parser-error feedback, carry an origin and start nothing); a completion is an assistant
message with tool calls. Each call's argument text is what the model sent: the message's
``sent_arguments`` where the loop recorded one (the call ran with repaired or changed arguments),
else the arguments the message carries (the JSON of what the model sent). Graders that judge what
was sent -- BFCL's checker, the per-turn check that a turn made its calls -- read calls from here,
never from what ran.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from capplan.trials.run_folder.recording import ORIGIN, SENT_ARGUMENTS


@dataclass(frozen=True)
class SentCall:
    """One tool call: its name and its argument text as the model sent it."""

    name: str
    text: str

    def arguments(self) -> dict[str, Any] | None:
        """The arguments as a JSON decoder reads the text (``json.loads``, as BFCL's decoder does); None when
        the text is not a JSON object."""
        try:
            value = json.loads(self.text)
        except (ValueError, RecursionError):
            return None
        return value if isinstance(value, dict) else None


#: per user turn, per completion with tool calls, its calls
TurnCompletions = list[list[list[SentCall]]]


def sent_calls(trajectory: dict[str, Any]) -> TurnCompletions:
    """The agent's completions with tool calls, grouped by user turn (a turn with none: an empty list)."""
    turns: TurnCompletions = []
    for message in trajectory.get("messages") or []:
        role = message.get("role")
        if role == "user" and ORIGIN not in message:
            turns.append([])
            continue
        calls = message.get("tool_calls")
        if role != "assistant" or not calls or not turns:
            continue
        sent = message.get(SENT_ARGUMENTS) or {}
        completion = []
        for call in calls:
            function = call.get("function") or {}
            raw = sent.get(call.get("id"), function.get("arguments"))
            text = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
            completion.append(SentCall(str(function.get("name") or ""), text))
        turns[-1].append(completion)
    return turns


def undecodable(completion: list[SentCall]) -> SentCall | None:
    """The first call of ``completion`` whose argument text is not a JSON object; None when all are."""
    return next((call for call in completion if not call.name or call.arguments() is None), None)
