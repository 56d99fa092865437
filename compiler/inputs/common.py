"""Pieces shared by the preset and overlay formats: policy references and merge markers."""

# no `from __future__ import annotations`: pydantic then reads these annotations as objects
# instead of evaluating strings, a measurable share of every command's start-up

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field


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
    params: dict[str, Any] = Field(default_factory=dict, description="Constructor keyword arguments.")


PolicyValue = Annotated[
    PolicyValueModel, BeforeValidator(_policy_from_name, json_schema_input_type=str | PolicyValueModel)
]


# --- bounded values -------------------------------------------------------------------------
# Every number an input file sets is finite (``allow_inf_nan=False`` above) and bounded above, so a
# value from a pull request cannot make a run wait forever, loop for 10^12 turns or overflow a
# provider's integer; every duration and count that zero would break is above zero. The bounds
# are generous (well past any real model or run) and listed in the README's Limits section.

#: retries of one kind for one call (empty completion, max-tokens truncation, parser error)
MAX_RETRY_COUNT = 100
#: tokens: a context window, a watermark, an output cap, a thinking budget
MAX_TOKENS = 100_000_000
#: characters of tool output kept in the prompt
MAX_TOOL_OUTPUT_CHARS = 100_000_000
#: turns of one trial
MAX_TURNS = 10_000
#: seconds one attempt may take (and any other per-call wait)
MAX_TIMEOUT_S = 86_400.0
#: sampling temperature (providers accept 0-2; 1 for some)
MAX_TEMPERATURE = 2.0
#: a seed fits a signed 64-bit integer, what every provider's API takes
SEED_RANGE = (-(2**63), 2**63 - 1)
#: USD per million tokens; -1e6 is the variable-price-router sentinel of pricing.json
MAX_PRICE = 1_000_000.0

RetryCount = Annotated[int, Field(ge=0, le=MAX_RETRY_COUNT)]
TokenCount = Annotated[int, Field(gt=0, le=MAX_TOKENS)]
CharCount = Annotated[int, Field(gt=0, le=MAX_TOOL_OUTPUT_CHARS)]
TurnCount = Annotated[int, Field(gt=0, le=MAX_TURNS)]
TimeoutSeconds = Annotated[float, Field(gt=0, le=MAX_TIMEOUT_S)]
Temperature = Annotated[float, Field(ge=0, le=MAX_TEMPERATURE)]
Seed = Annotated[int, Field(ge=SEED_RANGE[0], le=SEED_RANGE[1])]

#: characters a header value (OpenRouter attribution) may have
MAX_HEADER_CHARS = 2048


def _header_value(value: str) -> str:
    # a CR/LF would split the HTTP header (every call then fails far from here); any other control
    # character is refused by the HTTP client at call time. Never quote the value: it may be a token.
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise ValueError("a header value must not contain a line break or other control character")
    return value


HeaderValue = Annotated[str, Field(min_length=1, max_length=MAX_HEADER_CHARS), AfterValidator(_header_value)]
