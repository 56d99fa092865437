"""``param_value_rules``: values a route refuses, and what to do instead.

The closed set of parameters a rule can reach lives here, beside the code that consults each
one, so adding a parameter means adding its consult site in the same change.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

#: parameter -> how its values are keyed (rules match the value the call would send)
RULABLE_PARAMS: dict[str, type] = {
    "tool_choice": str,
    "reasoning_effort": str,
    "temperature": float,
    "top_p": float,
}

RuleAction = Literal["reject", "override", "drop"]


class ValueRule(BaseModel):
    """What to do when a call would send one specific value of a rulable parameter."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    action: RuleAction = Field(
        description="reject: refuse to build the request; override: send `with` instead; drop: omit the parameter."
    )
    with_: str | float | None = Field(
        None, alias="with", description="The value sent instead (override only, required there)."
    )
    evidence: str = Field(
        min_length=1, description="Dated claim about the provider that justifies the rule; required."
    )

    @model_validator(mode="after")
    def _with_only_for_override(self) -> ValueRule:
        if self.action == "override" and self.with_ is None:
            raise ValueError("action 'override' needs a `with:` value naming what is sent instead")
        if self.action != "override" and self.with_ is not None:
            raise ValueError(f"`with:` only applies to action 'override', not {self.action!r}")
        return self


def value_key(param: str, value: object) -> str:
    """Canonical text key of ``value`` for ``param`` (rules are keyed by it in plans)."""
    kind = RULABLE_PARAMS[param]
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{param} values are numbers, got {value!r}")
        return repr(float(value))
    if not isinstance(value, str):
        raise ValueError(f"{param} values are strings, got {value!r}")
    return value
