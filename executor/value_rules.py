"""``param_value_rules``: values a route refuses, and what to do instead.

The closed set of parameters a rule can reach lives here, beside the code that consults each
one, so adding a parameter means adding its consult site in the same change.
"""

# no `from __future__ import annotations`: pydantic then reads these annotations as objects
# instead of evaluating strings, a measurable share of every command's start-up

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

from capplan.executor.errors import ExecutorError
from capplan.executor.reasoning import EffortLevel

LOGGER_NAME = "capplan.value_rules"

#: parameter -> how its values are keyed (rules match the value the call would send)
RULABLE_PARAMS: dict[str, type] = {
    "tool_choice": str,
    "reasoning_effort": str,
    "temperature": float,
    "top_p": float,
    "parallel_tool_calls": bool,
}

RuleAction = Literal["reject", "override", "drop"]


class ValueRule(BaseModel):
    """What to do when a call would send one specific value of a rulable parameter."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, defer_build=True)

    action: RuleAction = Field(
        description="reject: refuse to build the request; override: send `with` instead; drop: omit the parameter."
    )
    with_: bool | str | float | None = Field(
        None, alias="with", description="The value sent instead (override only, required there)."
    )
    evidence: str = Field(
        min_length=1, pattern=r"\S", description="Dated claim about the provider that justifies the rule; required."
    )

    @model_validator(mode="after")
    def _with_only_for_override(self) -> "ValueRule":
        if self.action == "override" and self.with_ is None:
            raise ValueError("action 'override' needs a `with:` value naming what is sent instead")
        if self.action != "override" and self.with_ is not None:
            raise ValueError(f"`with:` only applies to action 'override', not {self.action!r}")
        return self


def value_key(param: str, value: object) -> str:
    """Canonical text key of ``value`` for ``param`` (rules are keyed by it in plans)."""
    kind = RULABLE_PARAMS[param]
    if kind is bool:
        # YAML keys and `with:` values arrive as booleans or as the strings YAML would print
        if isinstance(value, bool):
            return "true" if value else "false"
        if value in ("true", "false"):
            return str(value)
        raise ValueError(f"{param} values are true or false, got {value!r}")
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{param} values are numbers, got {value!r}")
        return repr(float(value))
    if not isinstance(value, str):
        raise ValueError(f"{param} values are strings, got {value!r}")
    return value


#: The values a caller can pick for each string-valued rulable parameter, for "remaining choices".
PARAM_CHOICES: dict[str, tuple[str, ...]] = {
    "tool_choice": ("auto", "none", "required"),
    "reasoning_effort": get_args(EffortLevel),
    "parallel_tool_calls": ("true", "false"),
}


#: Numeric rulable parameters: the values a provider could be sent at all (low, high, low inclusive).
PARAM_RANGES: dict[str, tuple[float, float, bool]] = {
    "temperature": (0.0, 2.0, True),
    "top_p": (0.0, 1.0, False),
}


def rule_value_problem(param: str, value: object) -> str | None:
    """Why ``value`` can never be sent as ``param`` (a rule on it would never be consulted), or None."""
    try:
        key = value_key(param, value)
    except ValueError as exc:
        return str(exc)
    choices = PARAM_CHOICES.get(param)
    if choices is not None and key not in choices:
        return f"{key!r} is not a {param} value; valid: {', '.join(choices)}"
    bounds = PARAM_RANGES.get(param)
    if bounds is not None:
        number, (low, high, low_inclusive) = float(key), bounds
        if number != number or not (low <= number <= high) or (number == low and not low_inclusive):
            return f"{param} {key} is outside {'[' if low_inclusive else '('}{low:g}, {high:g}]"
    return None


#: what ``_consult`` returns as the value to send when a rule drops the parameter
_DROP = object()


class RejectedValueError(ExecutorError, ValueError):
    """A call would send a value a ``param_value_rules`` entry rejects; the request is not built."""

    code = "VALUE_RULE"

    def __init__(self, param: str, value: object, remaining: str, evidence: str) -> None:
        self.param, self.value, self.remaining, self.evidence = param, value, remaining, evidence
        super().__init__(
            f"{param}={value!r} is rejected on this route; remaining choices for {param}: {remaining}; "
            f"evidence: {evidence}"
        )


@dataclass(frozen=True)
class Substitution:
    """A parameter a value rule changed: overridden (``sent`` is the value sent) or dropped (``None``)."""

    param: str
    requested: Any
    sent: Any
    action: Literal["override", "drop"]
    evidence: str


def apply_value_rules(
    kwargs: dict[str, Any],
    rules: Mapping[str, Mapping[str, ValueRule]],
    *,
    has_tools: bool,
) -> tuple[dict[str, Any], tuple[Substitution, ...]]:
    """Consult every rulable parameter at its site; returns new kwargs and what was changed.

    Sites: ``tool_choice`` and ``parallel_tool_calls`` (only when tools are sent: they travel only
    beside them; a named-tool dict is not a rulable value), ``reasoning_effort`` top-level and at
    ``extra_body.reasoning.effort``, ``temperature``, ``top_p``. ``reject`` raises
    :class:`RejectedValueError`; ``override`` sends ``with`` and logs a WARNING; ``drop`` omits
    the parameter. ``kwargs`` is never mutated.
    """
    unknown = sorted(set(rules) - set(RULABLE_PARAMS))
    if unknown:
        raise ValueError(f"value rules for {unknown} can never be consulted; rulable: {sorted(RULABLE_PARAMS)}")
    out = dict(kwargs)
    changes: list[Substitution] = []
    for param in RULABLE_PARAMS:  # each one's top-level site
        by_value = rules.get(param)
        if not by_value or param not in out or (param == "tool_choice" and not has_tools):
            continue
        if param == "tool_choice" and not isinstance(out[param], str):
            continue
        if param == "parallel_tool_calls" and not has_tools:
            continue
        sent, change = _consult(param, out[param], by_value)
        if change is not None:
            changes.append(change)
            if sent is _DROP:
                del out[param]
            else:
                out[param] = sent
    # reasoning_effort's second site: the OpenRouter route carries it in extra_body.reasoning
    effort_rules = rules.get("reasoning_effort")
    nested = _nested_effort(out)
    if effort_rules and nested is not None:
        sent, change = _consult("reasoning_effort", nested, effort_rules)
        if change is not None:
            changes.append(change)
            extra_body = dict(out["extra_body"])
            reasoning = dict(extra_body["reasoning"])
            if sent is _DROP:
                del reasoning["effort"]
            else:
                reasoning["effort"] = sent
            extra_body["reasoning"] = reasoning
            out["extra_body"] = extra_body
    return out, tuple(changes)


def _nested_effort(kwargs: Mapping[str, Any]) -> Any:
    extra_body = kwargs.get("extra_body")
    if not isinstance(extra_body, Mapping):
        return None
    reasoning = extra_body.get("reasoning")
    if not isinstance(reasoning, Mapping):
        return None
    return reasoning.get("effort")


def _consult(param: str, value: Any, by_value: Mapping[str, ValueRule]) -> tuple[Any, Substitution | None]:
    rule = by_value.get(value_key(param, value))
    if rule is None:
        return value, None
    if rule.action == "reject":
        raise RejectedValueError(param, value, _remaining(param, by_value), rule.evidence)
    if rule.action == "drop":
        dropped = Substitution(param, value, None, "drop", rule.evidence)
        note_substitution(dropped)
        return _DROP, dropped
    sent = _with_value(param, rule)
    if value_key(param, sent) in by_value:
        # substituting into another declared gap would send a value the rules call unusable
        raise ValueError(f"{param} rule for {value!r} overrides with {sent!r}, which is itself ruled")
    overridden = Substitution(param, value, sent, "override", rule.evidence)
    note_substitution(overridden)
    return sent, overridden


def note_substitution(change: Substitution) -> None:
    """Log one substitution, as every call that makes it does (a request builder that remembers
    a call's substitutions logs them again for each call it builds with them)."""
    # imported here: compiling and linting never log a substitution, and importing logging is a
    # measurable share of their start-up
    import logging

    logger = logging.getLogger(LOGGER_NAME)
    param, value = change.param, change.requested
    if change.action == "drop":
        # omitting tool_choice=auto is how the envelope says "the model decides": the same request.
        # Any other omission hands the choice to the provider's default, a change worth a warning.
        level = logging.INFO if (param, value) == ("tool_choice", "auto") else logging.WARNING
        logger.log(level, "%s=%r dropped: the provider default applies; evidence: %s", param, value, change.evidence)
        return
    logger.warning(
        "%s=%r overridden: sending %r instead; evidence: %s. Results of this call are not comparable "
        "with calls that sent %r.",
        param,
        value,
        change.sent,
        change.evidence,
        value,
    )


def _with_value(param: str, rule: ValueRule) -> Any:
    sent = rule.with_
    if RULABLE_PARAMS[param] is bool:
        if isinstance(sent, bool):
            return sent
        if sent in ("true", "false"):
            return sent == "true"
        raise ValueError(f"{param} override needs true or false in `with:`, got {sent!r}")
    if RULABLE_PARAMS[param] is float:
        if isinstance(sent, bool) or not isinstance(sent, (int, float)):
            raise ValueError(f"{param} override needs a number in `with:`, got {sent!r}")
        return float(sent)
    if not isinstance(sent, str):
        raise ValueError(f"{param} override needs a string in `with:`, got {sent!r}")
    return sent


def _remaining(param: str, by_value: Mapping[str, ValueRule]) -> str:
    rejected = sorted(key for key, rule in by_value.items() if rule.action == "reject")
    choices = PARAM_CHOICES.get(param)
    if choices is None:
        return f"any value except {', '.join(rejected)}"
    listed = []
    for choice in choices:
        rule = by_value.get(choice)
        if rule is None:
            listed.append(choice)
        elif rule.action == "override":
            listed.append(f"{choice} (sent as {rule.with_})")
        elif rule.action == "drop":
            listed.append(f"{choice} (omitted)")
    return ", ".join(listed) if listed else "none"
