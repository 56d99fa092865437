"""Tool-result content: how a tool's text and images become a ``role=tool`` message's ``content``.

Images a route cannot carry are never dropped silently: the text-only policies replace each one
with a note naming what was not sent, so the model (and anyone reading the request) knows the
tool returned it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

from capplan.executor.errors import UnsupportedContentError

ContentFormat = Literal["openai", "anthropic"]

#: Media types Anthropic accepts in an image block.
ANTHROPIC_IMAGE_TYPES: frozenset[str] = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


def image_fields(image: Any) -> tuple[str, str]:
    """``(media_type, base64 data)`` of a tool image given as a mapping or an object with those fields."""
    if isinstance(image, Mapping):
        media_type, data = image.get("media_type"), image.get("data")
    else:
        media_type, data = getattr(image, "media_type", None), getattr(image, "data", None)
    if not isinstance(media_type, str) or not media_type or not isinstance(data, str) or not data:
        raise UnsupportedContentError(
            f"a tool image needs a non-empty `media_type` and base64 `data` string, got {image!r:.200}"
        )
    return media_type, data


class ToolContentPolicy(ABC):
    """Renders one tool result for the wire."""

    slot: ClassVar[str] = "content_policy"
    name: ClassVar[str]

    @property
    @abstractmethod
    def format(self) -> ContentFormat:
        """The content shape this policy emits: ``openai`` or ``anthropic``."""

    @property
    @abstractmethod
    def supports_images(self) -> bool:
        """Whether tool-result images reach the model as images."""

    @abstractmethod
    def render_tool_result(self, text: str, images: Sequence[Any] = ()) -> str | list[dict[str, Any]]:
        """The ``content`` of the ``role=tool`` message for a result of ``text`` plus ``images``."""


class TextOnlyContent(ToolContentPolicy):
    """Base of the text-only policies: a string; each image becomes a note in the text.

    Not registered itself: each route that renders this way registers its own subclass, whose
    name the notes carry.
    """

    @property
    def format(self) -> ContentFormat:
        """``openai``: the OpenAI chat shape, a plain string."""
        return "openai"

    @property
    def supports_images(self) -> bool:
        """``False``: the OpenAI chat format allows only text in a tool message."""
        return False

    def render_tool_result(self, text: str, images: Sequence[Any] = ()) -> str:
        """``text``, followed by one note per image that could not be sent."""
        if not images:
            return text
        notes = [self._image_note(i, len(images), *image_fields(image)) for i, image in enumerate(images, 1)]
        return "\n\n".join([text, "\n".join(notes)]) if text else "\n".join(notes)

    def _image_note(self, position: int, total: int, media_type: str, data: str) -> str:
        size = len(data.rstrip("=")) * 3 // 4  # decoded size of the base64 payload
        return (
            f"[image {position} of {total} returned by the tool was not sent ({media_type}, {size} bytes): "
            f"tool results under the {self.name!r} content policy carry text only]"
        )


class OpenAIContent(TextOnlyContent):
    """Text-only tool results, the default for every OpenAI-shaped route."""

    name: ClassVar[str] = "openai"


class NovaContent(TextOnlyContent):
    """Nova's tool results: the OpenAI text-only shape.

    Nova is reached through its OpenAI-compatible endpoint, which has no image blocks in tool
    results; its notes name this policy, so a reader can tell which route refused the image.
    """

    name: ClassVar[str] = "nova"


class AnthropicContent(ToolContentPolicy):
    """Tool results with images: text and image parts, which litellm turns into Anthropic blocks.

    The parts are OpenAI-shaped (``{"type": "image_url", "image_url": {"url": "data:…"}}``) on
    purpose. litellm 1.110.2's Anthropic tool-result conversion
    (``convert_to_anthropic_tool_result`` in ``litellm_core_utils/prompt_templates/factory.py``)
    turns ``image_url`` parts into Anthropic ``{"type": "image", "source": {base64}}`` blocks and
    keeps a part's ``cache_control``, but has no branch for a native ``{"type": "image"}`` part
    and drops it without a word (measured against a loopback server). On OpenAI-compatible
    routes (OpenRouter) litellm moves image parts out of tool messages into a following user
    message, so the image still reaches the model.
    """

    name: ClassVar[str] = "anthropic"

    @property
    def format(self) -> ContentFormat:
        """``anthropic``."""
        return "anthropic"

    @property
    def supports_images(self) -> bool:
        """``True``."""
        return True

    def render_tool_result(self, text: str, images: Sequence[Any] = ()) -> str | list[dict[str, Any]]:
        """``text`` alone, or a text part (when non-empty) followed by one image part per image."""
        if not images:
            return text
        parts: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        for image in images:
            media_type, data = image_fields(image)
            if media_type not in ANTHROPIC_IMAGE_TYPES:
                raise UnsupportedContentError(
                    f"tool image of type {media_type!r} cannot be sent to Anthropic; "
                    f"supported: {', '.join(sorted(ANTHROPIC_IMAGE_TYPES))}"
                )
            parts.append({"type": "image_url", "image_url": {"url": f"data:{media_type};base64,{data}"}})
        return parts
