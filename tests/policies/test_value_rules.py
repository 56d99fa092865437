"""param_value_rules: every action at every consult site, and what is recorded and logged."""

from __future__ import annotations

import copy
import logging
from typing import Any

import pytest

from capplan.executor.value_rules import RULABLE_PARAMS, RejectedValueError, Substitution, ValueRule, apply_value_rules, value_key

EVIDENCE = "2026-05-21, litellm 1.83.14: empty response with tool calls"


def rule(action: str, with_: Any = None) -> ValueRule:
    data: dict[str, Any] = {"action": action, "evidence": EVIDENCE}
    if with_ is not None:
        data["with"] = with_
    return ValueRule.model_validate(data)


def nested(effort: str) -> dict[str, Any]:
    return {"extra_body": {"provider": {"order": ["x"]}, "reasoning": {"effort": effort, "enabled": True}}}


# --- reject ----------------------------------------------------------------------------------


def test_reject_names_param_value_remaining_choices_and_evidence() -> None:
    rules = {"reasoning_effort": {"medium": rule("reject"), "high": rule("override", "low"), "xhigh": rule("drop")}}
    with pytest.raises(RejectedValueError) as caught:
        apply_value_rules({"reasoning_effort": "medium"}, rules, has_tools=True)
    error = caught.value
    assert (error.param, error.value, error.evidence) == ("reasoning_effort", "medium", EVIDENCE)
    assert str(error) == (
        "reasoning_effort='medium' is rejected on this route; remaining choices for reasoning_effort: "
        "minimal, low, high (sent as low), xhigh (omitted); evidence: " + EVIDENCE
    )
    assert isinstance(error, ValueError)


def test_reject_of_a_number_names_what_is_excluded() -> None:
    rules = {"temperature": {"0.0": rule("reject"), "1.0": rule("reject")}}
    with pytest.raises(RejectedValueError, match="remaining choices for temperature: any value except 0.0, 1.0"):
        apply_value_rules({"temperature": 0}, rules, has_tools=False)


@pytest.mark.parametrize(
    ("kwargs", "rules", "has_tools"),
    [
        ({"tool_choice": "required", "tools": [{}]}, {"tool_choice": {"required": rule("reject")}}, True),
        ({"reasoning_effort": "medium"}, {"reasoning_effort": {"medium": rule("reject")}}, False),
        (nested("medium"), {"reasoning_effort": {"medium": rule("reject")}}, False),
        ({"temperature": 0.5}, {"temperature": {"0.5": rule("reject")}}, False),
        ({"top_p": 1}, {"top_p": {"1.0": rule("reject")}}, False),
    ],
)
def test_reject_fires_at_every_site(kwargs: dict[str, Any], rules: dict[str, Any], has_tools: bool) -> None:
    with pytest.raises(RejectedValueError):
        apply_value_rules(kwargs, rules, has_tools=has_tools)


# --- override --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "rules", "expected", "requested", "sent"),
    [
        ({"tool_choice": "auto"}, {"tool_choice": {"auto": rule("override", "required")}}, {"tool_choice": "required"}, "auto", "required"),
        ({"reasoning_effort": "medium"}, {"reasoning_effort": {"medium": rule("override", "low")}}, {"reasoning_effort": "low"}, "medium", "low"),
        (nested("medium"), {"reasoning_effort": {"medium": rule("override", "low")}}, nested("low"), "medium", "low"),
        ({"temperature": 0}, {"temperature": {"0.0": rule("override", 0.1)}}, {"temperature": 0.1}, 0, 0.1),
        ({"top_p": 1.0}, {"top_p": {"1.0": rule("override", 0.95)}}, {"top_p": 0.95}, 1.0, 0.95),
    ],
)
def test_override_sends_with_records_and_warns(
    kwargs: dict[str, Any], rules: dict[str, Any], expected: dict[str, Any], requested: Any, sent: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    original = copy.deepcopy(kwargs)
    with caplog.at_level(logging.WARNING, logger="capplan.value_rules"):
        got, substitutions = apply_value_rules(kwargs, rules, has_tools=True)
    assert got == expected and kwargs == original
    param = next(iter(rules))
    assert substitutions == (Substitution(param, requested, sent, "override", EVIDENCE),)
    [record] = caplog.records
    assert record.levelno == logging.WARNING and record.name == "capplan.value_rules"
    message = record.getMessage()
    assert repr(requested) in message and repr(sent) in message and EVIDENCE in message


def test_override_into_a_ruled_value_is_refused() -> None:
    rules = {"reasoning_effort": {"medium": rule("override", "low"), "low": rule("reject")}}
    with pytest.raises(ValueError, match="itself ruled"):
        apply_value_rules({"reasoning_effort": "medium"}, rules, has_tools=False)


@pytest.mark.parametrize(
    ("param", "value", "with_", "match"),
    [("temperature", 0.0, "warm", "needs a number"), ("tool_choice", "auto", 1.5, "needs a string")],
)
def test_override_value_of_the_wrong_type_is_refused(param: str, value: Any, with_: Any, match: str) -> None:
    rules = {param: {("0.0" if param == "temperature" else "auto"): rule("override", with_)}}
    with pytest.raises(ValueError, match=match):
        apply_value_rules({param: value}, rules, has_tools=True)


# --- drop ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "rules", "expected"),
    [
        ({"tool_choice": "auto", "tools": [1]}, {"tool_choice": {"auto": rule("drop")}}, {"tools": [1]}),
        ({"reasoning_effort": "xhigh"}, {"reasoning_effort": {"xhigh": rule("drop")}}, {}),
        (nested("xhigh"), {"reasoning_effort": {"xhigh": rule("drop")}},
         {"extra_body": {"provider": {"order": ["x"]}, "reasoning": {"enabled": True}}}),
        ({"temperature": 2.0, "top_p": 0.5}, {"temperature": {"2.0": rule("drop")}}, {"top_p": 0.5}),
        ({"top_p": 0.5}, {"top_p": {"0.5": rule("drop")}}, {}),
    ],
)
def test_drop_omits_and_records(kwargs: dict[str, Any], rules: dict[str, Any], expected: dict[str, Any]) -> None:
    original = copy.deepcopy(kwargs)
    got, substitutions = apply_value_rules(kwargs, rules, has_tools=True)
    assert got == expected and kwargs == original
    assert [(s.action, s.sent) for s in substitutions] == [("drop", None)]


def test_dropping_tool_choice_auto_is_free_but_dropping_effort_warns(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="capplan.value_rules"):
        apply_value_rules({"tool_choice": "auto"}, {"tool_choice": {"auto": rule("drop")}}, has_tools=True)
        apply_value_rules({"reasoning_effort": "high"}, {"reasoning_effort": {"high": rule("drop")}}, has_tools=True)
    assert [r.levelno for r in caplog.records] == [logging.INFO, logging.WARNING]


# --- where rules do not apply ----------------------------------------------------------------


def test_tool_choice_rules_are_inert_without_tools() -> None:
    kwargs = {"tool_choice": "auto"}
    got, substitutions = apply_value_rules(kwargs, {"tool_choice": {"auto": rule("reject")}}, has_tools=False)
    assert got == kwargs and substitutions == ()


def test_a_named_tool_choice_is_not_a_rulable_value() -> None:
    choice = {"type": "function", "function": {"name": "f"}}
    got, _ = apply_value_rules({"tool_choice": choice}, {"tool_choice": {"auto": rule("reject")}}, has_tools=True)
    assert got == {"tool_choice": choice}


def test_unruled_values_and_absent_params_pass_through() -> None:
    kwargs = {"reasoning_effort": "low", "temperature": 0.2, **nested("high")}
    rules = {"reasoning_effort": {"medium": rule("reject")}, "temperature": {"0.0": rule("reject")}, "top_p": {"1.0": rule("drop")}}
    got, substitutions = apply_value_rules(kwargs, rules, has_tools=False)
    assert got == kwargs and got is not kwargs and substitutions == ()


def test_both_effort_sites_are_consulted_in_one_call() -> None:
    kwargs = {"reasoning_effort": "medium", **nested("medium")}
    got, substitutions = apply_value_rules(kwargs, {"reasoning_effort": {"medium": rule("override", "low")}}, has_tools=False)
    assert got["reasoning_effort"] == "low" and got["extra_body"]["reasoning"]["effort"] == "low"
    assert len(substitutions) == 2


def test_rules_for_a_parameter_nothing_consults_are_refused() -> None:
    with pytest.raises(ValueError, match="can never be consulted"):
        apply_value_rules({}, {"max_tokens": {"1": rule("drop")}}, has_tools=False)


def test_every_rulable_parameter_has_a_consult_site() -> None:
    # one kwargs dict carrying each rulable parameter; a reject rule on each must fire
    values: dict[str, Any] = {
        "tool_choice": "auto", "reasoning_effort": "low", "temperature": 0.0, "top_p": 1.0, "parallel_tool_calls": False,
    }
    assert set(values) == set(RULABLE_PARAMS)
    for param, value in values.items():
        key = value_key(param, value)
        with pytest.raises(RejectedValueError, match=param):
            apply_value_rules(dict(values), {param: {key: rule("reject")}}, has_tools=True)


def test_values_of_the_wrong_type_are_refused() -> None:
    with pytest.raises(ValueError, match="temperature values are numbers"):
        apply_value_rules({"temperature": "hot"}, {"temperature": {"0.0": rule("reject")}}, has_tools=False)
