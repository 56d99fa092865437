"""Pieces shared by the preset and overlay formats: policy references and merge markers."""

# no `from __future__ import annotations`: pydantic then reads these annotations as objects
# instead of evaluating strings, a measurable share of every command's start-up

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from capplan.core import value_types
from capplan.core.default_factories import empty_dict


class Strict(BaseModel):
    """Base for input models: unknown keys are errors, values are immutable, types are exact.

    Strict: `enabled: 'yes'`, `max_tokens: '8000'` or a tagged scalar where a list belongs are
    mistakes to report, not values to coerce (a scalar taken as a list became one-character globs).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, defer_build=True,
                              allow_inf_nan=False, strict=True)


class MergeByKey:
    """Field marker: layers merge this mapping key by key instead of replacing it whole.

    ``depth`` is how many mapping levels merge (``param_value_rules`` merges per parameter and
    then per value, so depth 2). Every other field is replaced whole by a later layer.
    """

    def __init__(self, depth: int = 1) -> None:
        self.depth = depth


def _policy_from_name(value: Any) -> Any:
    # `schema_sanitizer: strict` is shorthand for `{name: strict}`
    return {"name": value} if isinstance(value, str) else value


class PolicyValueModel(Strict):
    """A policy for a slot, by registry name, with constructor parameters."""

    name: str = Field(min_length=1, description="Registry name within the slot (see `capplan policies`).")
    params: dict[str, Any] = Field(default_factory=empty_dict, description="Constructor keyword arguments.")


PolicyValue = Annotated[
    PolicyValueModel, BeforeValidator(_policy_from_name, json_schema_input_type=str | PolicyValueModel)
]


# --- bounded values -------------------------------------------------------------------------
# Every number an input file sets is finite (``allow_inf_nan=False`` above) and bounded above, so a
# value from a pull request cannot make a run wait forever, loop for 10^12 turns or overflow a
# provider's integer; every duration and count that zero would break is above zero. The bounds
# are generous (well past any real model or run) and listed in the README's Limits section.

# The bounds themselves are the plan model's (capplan.core.value_types), so a plan the compiler writes
# always loads and an input the plan would refuse is refused here, located, with the same words.
MAX_RETRY_COUNT = value_types.MAX_RETRIES
MAX_TOKENS = value_types.MAX_TOKENS
MAX_TOOL_OUTPUT_CHARS = value_types.MAX_CHARS
MAX_TURNS = value_types.MAX_TURNS
MAX_TIMEOUT_S = value_types.MAX_SECONDS
MAX_TEMPERATURE = value_types.MAX_TEMPERATURE
SEED_RANGE = (-value_types.MAX_SEED - 1, value_types.MAX_SEED)
#: USD per million tokens; -1e6 is the variable-price-router sentinel of pricing.json
MAX_PRICE = value_types.MAX_PRICE_PER_MTOK

RetryCount = Annotated[int, Field(ge=0, le=MAX_RETRY_COUNT)]
TokenCount = Annotated[int, Field(gt=0, le=MAX_TOKENS)]
CharCount = Annotated[int, Field(gt=0, le=MAX_TOOL_OUTPUT_CHARS)]
TurnCount = Annotated[int, Field(gt=0, le=MAX_TURNS)]
TimeoutSeconds = Annotated[float, Field(gt=0, le=MAX_TIMEOUT_S)]
Temperature = Annotated[float, Field(ge=0, le=MAX_TEMPERATURE)]
Seed = Annotated[int, Field(ge=SEED_RANGE[0], le=SEED_RANGE[1])]

#: a string sent as an HTTP header value (OpenRouter attribution): one line, no control characters
HeaderValue = value_types.HeaderValue
