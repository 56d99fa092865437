"""OpenRouter's base URL, reconciled from the two variables deployments set it with.

The spec's client reads ``OPENROUTER_BASE_URL`` and ``OPENROUTER_API_BASE`` (the name litellm
itself reads) and pins one value (spec § "What stays engine code"). capplan pins it into each
OpenRouter call's ``api_base`` — the same place ``--api-base`` and a binding's endpoint go — so
litellm and the direct transport send to the same URL and nothing process-global changes. Both
set to different URLs is refused naming both: which one a run used would otherwise depend on
which reader looked first (the spec's own code takes one name for itself and publishes the other).
A trailing ``/`` does not make two URLs different.
"""

from __future__ import annotations

from collections.abc import Mapping

from capplan.executor.errors import ExecutorError

NAMES = ("OPENROUTER_BASE_URL", "OPENROUTER_API_BASE")


class OpenRouterBaseConflict(ExecutorError):
    """Both OpenRouter base-URL variables are set, to different URLs."""

    code = "OPENROUTER_BASE_CONFLICT"


def openrouter_base_url(env: Mapping[str, str]) -> str | None:
    """The OpenRouter base URL the deployment set (None: litellm's default applies)."""
    first, second = ((env.get(name) or "").strip() for name in NAMES)
    if first and second and first.rstrip("/") != second.rstrip("/"):
        raise OpenRouterBaseConflict(
            f"{NAMES[0]} and {NAMES[1]} are both set, to different URLs; they name one setting (OpenRouter's base "
            f"URL), so unset one of them")
    return first or second or None
