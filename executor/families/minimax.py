"""MiniMax-M3: recovery of the ``tags`` arrays its XML → JSON tool-call conversion mangles.

M3 emits tool calls as XML that the provider converts to JSON, and the conversion corrupts the
``tags`` array nested in the ``updates`` / ``item`` objects on most calls: a repeated
``<item>`` element becomes ``{"item": X}``, or the array arrives JSON-encoded in a string, or
as ``""``. Those parents are free-form objects (``additionalProperties: true``), so no declared
type says ``tags`` is an array, and the repairs are confined to an explicit allowlist of sites:
turning ``""`` into ``[]`` anywhere else once corrupted real scalar fields on a sibling model.

Only the composite ``minimax_m3_tags`` is registered; its two stages are public for code that
wants one of them alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from capplan.executor.policies.response_policy import ResponsePolicy, coerce_json_strings

__all__ = [
    "ARRAY_SITES",
    "ItemRecursiveUnwrapResponse",
    "JsonRecursiveCoerceResponse",
    "MinimaxM3TagRecoveryResponse",
    "recover_stringified_tags",
    "unwrap_item_wrappers",
]

#: ``(parent parameter, field)`` pairs where a declared array is known to arrive mangled.
ARRAY_SITES: frozenset[tuple[str, str]] = frozenset({("updates", "tags"), ("item", "tags")})

#: Deepest ``{"item": {"item": …}}`` nesting unwrapped; observed output nests once, so anything
#: deeper is returned as emitted rather than guessed at.
MAX_ITEM_DEPTH = 64


def recover_stringified_tags(value: Any) -> Any:
    """``""`` → ``[]``; a JSON-encoded list or object → the native value; anything else unchanged."""
    if isinstance(value, str) and value == "":
        return []
    return coerce_json_strings({"tags": value})["tags"]


def unwrap_item_wrappers(value: Any) -> Any:
    """``{"item": X}`` → ``[X]`` (or ``X`` when it is already a list), through nested wrappers.

    ``{"item": {"item": "a"}}`` → ``["a"]``. A dict with any other key is left as emitted:
    there is no telling which key holds the value.
    """
    inner, depth = value, 0
    while isinstance(inner, dict) and set(inner) == {"item"}:
        if depth == MAX_ITEM_DEPTH:
            return value
        inner, depth = inner["item"], depth + 1
    if depth == 0:
        return value
    return inner if isinstance(inner, list) else [inner]


def _repair_sites(arguments: Mapping[str, Any], repair: Callable[[Any], Any]) -> dict[str, Any]:
    out = dict(arguments)
    for parent, field in sorted(ARRAY_SITES):
        container = out.get(parent)
        if isinstance(container, dict) and field in container:
            out[parent] = {**container, field: repair(container[field])}
    return out


class JsonRecursiveCoerceResponse(ResponsePolicy):
    """Stage one: JSON-encoded and empty-string ``tags`` at the allowlisted sites become lists.

    Scalar strings are never promoted and ``None`` is never touched. ``param_types`` is not
    consulted: the sites are inside free-form objects, where nothing is declared.
    """

    name: ClassVar[str] = "minimax_tags_json_coerce"

    def parse_arguments(
        self, arguments: dict[str, Any], *, param_types: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """``arguments`` with ``recover_stringified_tags`` applied at every ``ARRAY_SITES`` entry."""
        return _repair_sites(arguments, recover_stringified_tags)


class ItemRecursiveUnwrapResponse(ResponsePolicy):
    """Stage two: ``{"item": X}`` wrappers at the allowlisted sites become lists."""

    name: ClassVar[str] = "minimax_tags_item_unwrap"

    def parse_arguments(
        self, arguments: dict[str, Any], *, param_types: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """``arguments`` with ``unwrap_item_wrappers`` applied at every ``ARRAY_SITES`` entry."""
        return _repair_sites(arguments, unwrap_item_wrappers)


class MinimaxM3TagRecoveryResponse(ResponsePolicy):
    """Both stages, coerce first, so a stringified wrapper is decoded before it is unwrapped.

    A valid ``list[str]`` passes both stages unchanged, and fields outside the sites are never
    touched.
    """

    name: ClassVar[str] = "minimax_m3_tags"

    def __init__(self) -> None:
        self.stages: tuple[ResponsePolicy, ...] = (JsonRecursiveCoerceResponse(), ItemRecursiveUnwrapResponse())

    def parse_arguments(
        self, arguments: dict[str, Any], *, param_types: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """``arguments`` after each stage in turn."""
        for stage in self.stages:
            arguments = stage.parse_arguments(arguments, param_types=param_types)
        return dict(arguments)
