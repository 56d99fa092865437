"""Pieces shared by the preset and overlay formats: policy references and merge markers."""

# no `from __future__ import annotations`: pydantic then reads these annotations as objects
# instead of evaluating strings, a measurable share of every command's start-up

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field


class Strict(BaseModel):
    """Base for input models: unknown keys are errors, values are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, defer_build=True,
                              allow_inf_nan=False)


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
