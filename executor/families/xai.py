"""xAI Grok: the strict sanitiser with recursive-model, fieldless-map and union support."""

from __future__ import annotations

from typing import ClassVar

from capplan.executor.families.gemini import GeminiRecursiveSchema

__all__ = ["XaiGrokRecursiveSchema"]


class XaiGrokRecursiveSchema(GeminiRecursiveSchema):
    """A superset of ``strict`` for Grok, borrowing ``gemini_recursive``'s three mechanisms.

    Plain ``strict`` lost declared structure on Grok in three places, all before the request
    left: a recursive ``$ref`` refused the tool; a fieldless dict-map (``Dict[str, int]``) had
    no entry form; a map of discriminated-union values had its fields inside ``oneOf`` branches.
    Inherited: cycles become open objects, fieldless values are carried (pair with
    ``scalar_array_dict_map``), and discriminated unions are flattened so their fields can be
    lifted into entries (bare ``anyOf`` unions stay). Grok's ``strict`` presentation is kept:
    the root description and RE2-incompatible patterns are removed as ``strict`` removes them.
    """

    name: ClassVar[str] = "xai_grok_recursive"

    strip_parameters_root_description: ClassVar[bool] = True
    strip_re2_incompatible_patterns: ClassVar[bool] = True
