"""The simulated user speaking from the agent's seat: offering the help it came to ask for.

A user simulator that slips into the assistant's role answers the agent with the agent's own
service phrases (``How can I help you today?``, ``Is there anything else I can help you with?``,
``Thank you for contacting us.``). A customer has no use for them: they ask for help, they do not
offer it. Each pattern is a whole service phrase in the speaker's own voice, never a word
(``help`` and ``assist`` are every customer's vocabulary); quoted or reported phrases (``the bot
keeps saying "How can I help you?"``) are the customer in frame and pass, as the fourth-wall
detector's context checks decide.

Recall given up, knowingly: role reversal phrased in any other words (``Let me look into that for
you.`` is also what a customer says of their own records), and a customer who mocks the agent by
repeating its phrase without quotes.
"""

from __future__ import annotations

import re

from capplan.trials.usersim.detectors import context
from capplan.trials.usersim.detectors.base import Finding, bounded_excerpt

ASSISTANT_VOICE_REASONS: tuple[str, ...] = ("offered_help",)
"""Every reason code the assistant-voice detector can record."""

# bounded pieces only: the reply is scanned once, in linear time
_PHRASES = re.compile(
    r"\b(?:"
    r"(?:how|what)\s{1,4}(?:else\s{1,4})?(?:can|may|could)\s{1,4}i\s{1,4}(?:help|assist)\s{1,4}you"
    r"|is\s{1,4}there\s{1,4}anything\s{1,4}(?:else\s{1,4})?(?:that\s{1,4})?i\s{1,4}(?:can|could|may)\s{1,4}"
    r"(?:help|assist)\s{1,4}you"
    r"|thank\s{1,4}you\s{1,4}for\s{1,4}(?:contacting|calling|reaching\s{1,4}out\s{1,4}to)\s{1,4}(?:us|our)\b"
    r"|i(?:'|\u2019)?m\s{1,4}(?:happy|glad)\s{1,4}to\s{1,4}(?:help|assist)\s{1,4}you\s{1,4}(?:with|today)"
    r")",
    re.IGNORECASE,
)


class AssistantVoiceDetector:
    """Flags a user reply that offers the agent's help (the simulator in the assistant's seat)."""

    name = "assistant_voice"

    def inspect(self, text: str) -> Finding | None:
        """The first service phrase spoken in the user's own voice, or None."""
        for match in _PHRASES.finditer(text):
            before = text[max(0, match.start() - context.WINDOW):match.start()].lower()
            if context.quoted(before) or context.reported(before):
                continue
            return Finding(reason="offered_help", excerpt=bounded_excerpt(match.group()))
        return None
