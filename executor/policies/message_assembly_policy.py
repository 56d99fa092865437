"""What an assistant tool-call turn says when the model said nothing.

Bedrock/Nova ("The text field in the ContentBlock … is blank") and Moonshot direct ("the message
at position N with role 'assistant' must not be empty") reject an assistant turn whose content is
empty beside its ``tool_calls``; every other provider accepts that shape. The filler is data on
the instance, not a constant: a universal filler became a few-shot pattern that Gemini echoed
back as its own reply (2026-04-30), so each route that needs one declares its own string.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from pydantic import Field

from capplan.executor.policy_params import PolicyParams


class MessageAssemblyPolicy(ABC):
    """Whether empty assistant content on a tool-call turn is replaced, and by what."""

    slot: ClassVar[str] = "message_assembly_policy"
    name: ClassVar[str]

    @property
    @abstractmethod
    def inject_empty_assistant_filler(self) -> bool:
        """Whether empty / whitespace-only content on a tool-call turn is replaced."""

    @property
    @abstractmethod
    def empty_assistant_filler(self) -> str:
        """The replacement text (``""`` when nothing is replaced)."""

    def assistant_content(self, content: str | None, *, has_tool_calls: bool) -> str | None:
        """The content an assistant turn goes on the wire with.

        Only an empty or whitespace-only content beside tool calls is ever replaced; anything
        else is returned unchanged.
        """
        if has_tool_calls and self.inject_empty_assistant_filler and not (content or "").strip():
            return self.empty_assistant_filler
        return content


class NullMessageAssembly(MessageAssemblyPolicy):
    """The default: empty assistant content stays empty."""

    name: ClassVar[str] = "null"

    @property
    def inject_empty_assistant_filler(self) -> bool:
        """``False``."""
        return False

    @property
    def empty_assistant_filler(self) -> str:
        """``""``."""
        return ""


class FillEmptyAssistantAssembly(MessageAssemblyPolicy):
    """Replaces empty tool-call-turn content with a per-route filler string.

    Registered as ``nova`` (the name overlay files use); Moonshot direct passes ``" "``, the
    least content that clears its check without a phrase the model could echo back.
    """

    name: ClassVar[str] = "nova"

    class Params(PolicyParams):
        """The filler text."""

        empty_assistant_filler: str = Field(
            "I'll help you with that.", min_length=1,
            description="Text sent as the content of an empty tool-call turn (a single space is the smallest).",
        )

    def __init__(self, empty_assistant_filler: str = "I'll help you with that.") -> None:
        if not isinstance(empty_assistant_filler, str):
            raise TypeError(f"empty_assistant_filler must be a string, got {type(empty_assistant_filler).__name__}")
        if not empty_assistant_filler:
            # an empty filler would re-create the very shape the policy exists to avoid
            raise ValueError("empty_assistant_filler must not be empty; a single space is the smallest filler")
        self._filler = empty_assistant_filler

    @property
    def inject_empty_assistant_filler(self) -> bool:
        """``True``."""
        return True

    @property
    def empty_assistant_filler(self) -> str:
        """The filler this instance was built with."""
        return self._filler
