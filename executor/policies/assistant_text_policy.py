"""The ``assistant_text_policy`` slot: the assistant's reply text, as results record it.

It runs between the provider response and ``GenerationResult.text`` (what transcripts, graders
and judges read), on the full text, so a policy can recognise structure such as template
markers. Tool-call arguments are the response policy's business, not this slot's.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar


class AssistantTextPolicy(ABC):
    """Base of the ``assistant_text_policy`` slot."""

    slot: ClassVar[str] = "assistant_text_policy"
    name: ClassVar[str]

    @abstractmethod
    def parse_assistant_text(self, text: str, *, model: Any) -> str:
        """The text to record for ``text``.

        ``model`` is the plan's ``ModelIdentity`` (key, provider, name, wire model), so one
        policy can tell routes apart without a second registration.
        """


class PassthroughAssistantText(AssistantTextPolicy):
    """Records the reply exactly as the provider sent it."""

    name: ClassVar[str] = "passthrough"

    def parse_assistant_text(self, text: str, *, model: Any) -> str:
        """``text``, unchanged."""
        return text
