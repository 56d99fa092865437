"""The ``prompt_policy`` slot: what is added to the system prompt, given the tools offered.

It sees the tools as the caller declared them (before any sanitiser), so it can describe a
parameter in its native shape.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from capplan.executor.policies.dict_maps import detect_dict_maps, dict_map_hints_text


class SystemPromptPolicy(ABC):
    """Base of the ``prompt_policy`` slot."""

    slot: ClassVar[str] = "prompt_policy"
    name: ClassVar[str]

    @abstractmethod
    def enrich(self, system: str, tools: list[dict[str, Any]]) -> str:
        """The system prompt to send, given the caller's ``system`` text and ``tools``."""


class NoPromptEnrichment(SystemPromptPolicy):
    """Sends the system prompt exactly as given."""

    name: ClassVar[str] = "none"

    def enrich(self, system: str, tools: list[dict[str, Any]]) -> str:
        """``system``, unchanged."""
        return system


class DictMapHints(SystemPromptPolicy):
    """Spells out dict-map parameters in the system prompt, for models that silently drop them.

    Subclasses change what is said by overriding ``build_hints``.
    """

    name: ClassVar[str] = "dict_map_hints"

    def enrich(self, system: str, tools: list[dict[str, Any]]) -> str:
        """``system`` followed by ``build_hints(tools)``; unchanged without a system prompt or tools.

        With no system prompt there is nothing to append to, and adding one would change the
        conversation's shape rather than annotate it.
        """
        if not system or not tools:
            return system
        return system + self.build_hints(tools)

    def build_hints(self, tools: list[dict[str, Any]]) -> str:
        """The text appended to the system prompt: ``""``, or a blank line and one paragraph per map."""
        return dict_map_hints_text(detect_dict_maps(tools))
