"""The two shapes the user simulator exchanges with its callers (the trial runner, ``capplan guard``).

The simulator never talks to litellm itself: it is handed a ``generate`` callable, so the
same code runs against the executor's client in a trial and against a scripted callable in
a test. Only ``text`` is read from what that callable returns; the object itself rides back
on the reply so usage and cost stay with the caller.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeAlias

Message: TypeAlias = dict[str, Any]
"""One OpenAI-style chat message: ``{"role": ..., "content": str | list | None, ...}``."""


class GenerationLike(Protocol):
    """What a ``generate`` call returns; the simulator reads nothing but ``text``."""

    @property
    def text(self) -> str:
        """The words the model wrote, exactly as it wrote them."""
        ...


class GenerateFn(Protocol):
    """The model call the simulator is built around.

    ``system_prompt`` is the simulator's rendered prompt body and ``messages`` the role-flipped
    request (user/assistant turns only, alternating, starting and ending on ``user``).
    """

    def __call__(self, system_prompt: str, messages: list[Message], /) -> GenerationLike:
        """Generate one reply; a provider failure propagates as an exception."""
        ...
