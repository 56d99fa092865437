"""Google Gemini: a sanitiser for its JSON-Schema subset, and the response side that pairs with it.

Gemini's tool spec documents neither ``$defs``/``$ref`` nor ``oneOf`` + ``discriminator``; given
them, it loses the property names inside and invents description-derived keys instead. Both
sanitisers here therefore inline refs and flatten discriminated unions. Unlike the strict
routes, Gemini keeps two things ``strict`` removes: the parameters-root description (removing
it measurably hurt optional-field selection on flat tools) and RE2-incompatible patterns
(Gemini treats them as format hints; removing them hurt domains whose Decimal strings carry
them).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar

from capplan.executor.policies.dict_maps import DICT_MAP_VALUE, unwrap_value_wrappers
from capplan.executor.policies.response_policy import ArrayDictMapResponse, apply_at_dict_maps
from capplan.executor.policies.schema_sanitizer import SchemaPath
from capplan.executor.policies.strict_schema import StrictSchema, inline_tool_refs

__all__ = ["GeminiRecursiveSchema", "GeminiSchema", "ScalarArrayDictMapResponse"]


class GeminiSchema(StrictSchema):
    """``strict`` plus ``oneOf``-discriminator flattening, keeping root description and patterns.

    A bare ``Union[A, B]`` (``anyOf``, no ``discriminator``) is not flattened: Gemini reads
    inline ``anyOf`` branches correctly, and flattening them cost a whole domain its passes.
    """

    name: ClassVar[str] = "gemini"

    flatten_oneof_discriminator: ClassVar[bool] = True
    strip_parameters_root_description: ClassVar[bool] = False
    strip_re2_incompatible_patterns: ClassVar[bool] = False


class GeminiRecursiveSchema(GeminiSchema):
    """``gemini`` that accepts recursive models and carries fieldless dict-map values.

    A recursive ``$ref`` (``TreeNode.children: list[TreeNode]``) makes ``strict`` refuse the
    tool before the request exists, so the model never sees it. Here the re-entry point becomes
    an open object instead: the schema stays finite, and the tool's own validation still
    accepts a tree of any depth. Only re-entering a definition already on the current inlining
    path counts; one definition reached on two branches is inlined on both.
    Fieldless dict-map values (``Dict[str, int]``) are carried under ``VALUE_FIELD``; pair it
    with ``scalar_array_dict_map``.
    """

    name: ClassVar[str] = "gemini_recursive"

    carry_scalar_dict_map_value: ClassVar[bool] = True

    #: What a recursive ``$ref`` becomes at its point of re-entry.
    CYCLE_STUB: ClassVar[Mapping[str, Any]] = MappingProxyType({"type": "object", "additionalProperties": True})

    @classmethod
    def inline_refs_in_tool(cls, tool: dict[str, Any]) -> dict[str, Any]:
        """Inline refs as ``strict`` does, substituting ``CYCLE_STUB`` where a ref recurses."""

        def open_object(ref: str, chain: tuple[str, ...], path: SchemaPath) -> Any:
            return dict(cls.CYCLE_STUB)

        return inline_tool_refs(tool, on_cycle=open_object)


class ScalarArrayDictMapResponse(ArrayDictMapResponse):
    """``array_dict_map`` plus unwrapping of carried values back to the bare value.

    For a fieldless dict-map (``param_types`` label ``dict_map_value``) the pivot already turns
    ``[{"key": "A", "value": 10}]`` into ``{"A": 10}``. This class also repairs the model
    answering in the map's native shape with the wrapper kept, ``{"A": {"value": 10}}``
    (observed on Gemini Flash). Only exact one-field ``{"value": …}`` entries of maps declared
    fieldless are unwrapped, so an object-valued map whose objects have a ``value`` field is
    never touched.
    """

    name: ClassVar[str] = "scalar_array_dict_map"

    def parse_arguments(
        self, arguments: dict[str, Any], *, param_types: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """``array_dict_map``'s result with carried-value wrappers removed from fieldless maps."""
        pivoted = super().parse_arguments(arguments, param_types=param_types)
        if not param_types:
            return pivoted
        return apply_at_dict_maps(pivoted, param_types, self.unwrap_carried_values)

    def unwrap_carried_values(self, value: Any, label: str) -> Any:
        """``{k: {value: X}}`` → ``{k: X}`` for a fieldless map; anything else unchanged."""
        if label != DICT_MAP_VALUE or not isinstance(value, dict):
            return value
        return unwrap_value_wrappers(value, value_field=self.VALUE_FIELD)
