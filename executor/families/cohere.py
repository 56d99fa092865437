"""Cohere Command: a cycle-tolerant strict sanitiser, and removal of leaked template markers."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from capplan.executor.families.gemini import GeminiRecursiveSchema
from capplan.executor.policies.assistant_text_policy import AssistantTextPolicy

__all__ = ["CohereMarkerAssistantText", "CohereRecursiveSchema"]


class CohereRecursiveSchema(GeminiRecursiveSchema):
    """``gemini_recursive``'s mechanisms with ``strict``'s presentation.

    Inherited for what the Cohere route measured it needs: recursive ``$ref`` becomes an open
    object (``strict`` refused such tools outright) and fieldless dict-map values are carried.
    The Gemini-specific choices are reset to ``strict``'s, each for a route-specific reason:

    * patterns with lookarounds are removed: this route compiles them and answers HTTP 500;
    * ``oneOf`` + ``discriminator`` is kept: the route handles it natively, and flattening would
      reshape union values carried under the value field;
    * the parameters-root description is removed: nothing here depends on it.
    """

    name: ClassVar[str] = "cohere_recursive"

    flatten_oneof_discriminator: ClassVar[bool] = False
    strip_parameters_root_description: ClassVar[bool] = True
    strip_re2_incompatible_patterns: ClassVar[bool] = True


START_TEXT = "<|START_TEXT|>"
END_TEXT = "<|END_TEXT|>"
_REGION = re.compile(re.escape(START_TEXT) + "(.*?)" + re.escape(END_TEXT), re.DOTALL)


class CohereMarkerAssistantText(AssistantTextPolicy):
    """Removes the ``<|START_TEXT|>…<|END_TEXT|>`` chat-template markers Command-A+ can leak.

    A serving stack that does not strip its own template hands every reply back wrapped, and
    the markers then reach transcripts and judges. The rules, in order:

    1. no marker at all: the text is returned unchanged, byte for byte;
    2. one or more complete regions: their contents, each trimmed, joined by one space (text
       outside the regions is template residue);
    3. a stray marker left over (a reply cut off at the token limit): removed;

    and the result is trimmed. It is a no-op where the markers are already stripped upstream.
    """

    name: ClassVar[str] = "cohere_markers"

    def parse_assistant_text(self, text: str, *, model: Any) -> str:
        """``text`` without Cohere's reply markers (see the class docstring)."""
        if START_TEXT not in text and END_TEXT not in text:
            return text
        regions = _REGION.findall(text)
        kept = " ".join(region.strip() for region in regions) if regions else text
        return kept.replace(START_TEXT, "").replace(END_TEXT, "").strip()
