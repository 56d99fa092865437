"""``pricing.json``: USD per million tokens, keyed by model id without one ``openrouter/``."""

# no `from __future__ import annotations`: pydantic then reads these annotations as objects
# instead of evaluating strings, a measurable share of every command's start-up

from typing import Any

from pydantic import Field

from capplan.compiler.inputs.common import MAX_PRICE, Strict
from capplan.core.default_factories import empty_dict


class PriceModel(Strict):
    """Prices for one model, USD per million tokens. A negative price marks a variable-price router."""

    input: float = Field(ge=-MAX_PRICE, le=MAX_PRICE)
    output: float = Field(ge=-MAX_PRICE, le=MAX_PRICE)
    # only input and output carry the variable-price sentinel; a cache price lands in the plan as is
    cache_read: float | None = Field(None, ge=0, le=MAX_PRICE)
    cache_write: float | None = Field(None, ge=0, le=MAX_PRICE)


class PricingFile(Strict):
    """The pricing table."""

    meta: dict[str, Any] = Field(default_factory=empty_dict, alias="_meta", description="Where the prices came from.")
    models: dict[str, PriceModel] = Field(description="Model id → prices.")


def normalize_model_name(model_id: str) -> str:
    """Strip exactly one leading ``openrouter/``; any other slash-bearing name is kept verbatim."""
    return model_id[len("openrouter/"):] if model_id.startswith("openrouter/") else model_id
