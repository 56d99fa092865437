"""GenerationParams: every cell of the reasoning routing matrix, every flag, every fail-loud rule."""

from __future__ import annotations

import copy
import logging
from abc import abstractmethod
from typing import Any, ClassVar

import pytest

from capplan.executor.policies.params_policy import GenerationParams, ParamsPolicy, ReasoningConfigError
from capplan.executor.reasoning import ReasoningConfig
from capplan.executor.registry import policy_class

OFF = ReasoningConfig()
ADAPTIVE = ReasoningConfig(mode="adaptive", effort_hint="high")
BUDGET = ReasoningConfig(mode="budget", budget_tokens=2000, effort_hint="low")
BUDGET_NO_TOKENS = ReasoningConfig(mode="budget", effort_hint="medium")
BUDGET_NO_EFFORT = ReasoningConfig(mode="budget", budget_tokens=2000)

SAMPLING = {"temperature": 0.3, "top_p": 0.9, "top_k": 40}

#: route flags as the bundled presets and the openrouter provider overlay combine them
ROUTES: dict[str, dict[str, Any]] = {
    "thinking": {"reasoning_via_thinking_kwarg": True, "drop_sampling_when_thinking": True, "reasoning_budget_default": 8000},
    # Claude 4.7 over OpenRouter: the preset's thinking flags plus the overlay's extra_body flag
    "thinking+extra_body": {"reasoning_via_thinking_kwarg": True, "drop_sampling_when_thinking": True,
                            "reasoning_budget_default": 8000, "reasoning_via_extra_body": True},
    "extra_body": {"reasoning_via_extra_body": True},
    "plain": {},
}


def adapt(route: str | dict[str, Any], reasoning: ReasoningConfig, kwargs: dict[str, Any] | None = None, **call: Any) -> dict[str, Any]:
    flags = ROUTES[route] if isinstance(route, str) else route
    return GenerationParams(**flags).adapt(
        dict(kwargs or {"messages": []}),
        call.pop("config_temperature", None),
        call.pop("config_seed", None),
        call.pop("config_reasoning", OFF),
        call.pop("temperature", None),
        call.pop("seed", None),
        reasoning,
    )


def test_registry_name_resolves() -> None:
    assert policy_class("params_policy", "generation_params") is GenerationParams
    assert GenerationParams.name == "generation_params" and GenerationParams.slot == "params_policy"


# --- the routing matrix, cell by cell --------------------------------------------------------


@pytest.mark.parametrize("route", list(ROUTES))
def test_off_emits_nothing_and_keeps_sampling(route: str) -> None:
    assert adapt(route, OFF, {"messages": [], **SAMPLING}) == {"messages": [], **SAMPLING}


def test_adaptive_on_a_thinking_route_is_a_misconfiguration() -> None:
    with pytest.raises(ReasoningConfigError, match="'adaptive' on a thinking-kwarg route"):
        adapt("thinking", ADAPTIVE)


@pytest.mark.parametrize("route", ["extra_body", "thinking+extra_body"])
def test_adaptive_on_extra_body_route(route: str) -> None:
    # OpenRouter turns an effort level into a thinking budget for Claude itself
    assert adapt(route, ADAPTIVE) == {"messages": [], "extra_body": {"reasoning": {"effort": "high", "enabled": True}}}


def test_adaptive_on_plain_route() -> None:
    assert adapt("plain", ADAPTIVE) == {"messages": [], "reasoning_effort": "high"}


def test_budget_on_a_thinking_route_emits_thinking_and_drops_sampling() -> None:
    got = adapt("thinking", BUDGET, {"messages": [], **SAMPLING, "max_tokens": 9000})
    assert got == {"messages": [], "max_tokens": 9000, "thinking": {"type": "enabled", "budget_tokens": 2000}}


def test_budget_on_claude_over_openrouter_is_openrouter_s_max_tokens_and_drops_sampling() -> None:
    got = adapt("thinking+extra_body", BUDGET, {"messages": [], **SAMPLING, "max_tokens": 9000})
    assert got == {"messages": [], "max_tokens": 9000, "extra_body": {"reasoning": {"max_tokens": 2000, "enabled": True}}}
    assert adapt("thinking+extra_body", BUDGET_NO_TOKENS)["extra_body"]["reasoning"] == {"max_tokens": 8000, "enabled": True}


@pytest.mark.parametrize("config", [BUDGET, BUDGET_NO_EFFORT])
def test_budget_on_extra_body_route_forwards_the_user_s_budget(config: ReasoningConfig) -> None:
    assert adapt("extra_body", config) == {"messages": [], "extra_body": {"reasoning": {"max_tokens": 2000, "enabled": True}}}


def test_budget_on_plain_route_falls_back_to_effort() -> None:
    assert adapt("plain", BUDGET) == {"messages": [], "reasoning_effort": "low"}


# --- budget resolution and the effort fallback -----------------------------------------------


def test_thinking_route_default_budget_fills_a_bare_budget_config() -> None:
    assert adapt("thinking", BUDGET_NO_TOKENS)["thinking"] == {"type": "enabled", "budget_tokens": 8000}


def test_missing_budget_with_no_route_default_is_refused() -> None:
    with pytest.raises(ReasoningConfigError, match="without budget_tokens"):
        adapt({"reasoning_via_thinking_kwarg": True}, BUDGET_NO_TOKENS)


@pytest.mark.parametrize("route", ["extra_body", "plain"])
def test_effort_fallback_needs_no_budget(route: str) -> None:
    got = adapt(route, BUDGET_NO_TOKENS)
    assert got.get("reasoning_effort") == "medium" or got["extra_body"]["reasoning"]["effort"] == "medium"


def test_budget_without_effort_hint_on_a_plain_route_emits_nothing_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="capplan.params"):
        assert adapt("plain", BUDGET_NO_EFFORT) == {"messages": []}
    assert "no effort_hint to fall back on" in caplog.text


def test_nothing_to_forward_on_an_extra_body_route_is_not_invented(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="capplan.params"):
        assert adapt("extra_body", ReasoningConfig(mode="budget")) == {"messages": []}
    assert "no effort_hint to fall back on" in caplog.text


# --- drop_sampling_when_thinking is atomic with the thinking kwarg ---------------------------


def test_sampling_survives_when_thinking_is_off_on_a_thinking_route() -> None:
    assert adapt("thinking", OFF, {"messages": [], **SAMPLING}, temperature=0.1)["top_k"] == 40


def test_sampling_survives_thinking_without_the_drop_flag() -> None:
    got = adapt({"reasoning_via_thinking_kwarg": True}, BUDGET, {"messages": [], **SAMPLING})
    assert {k: got[k] for k in SAMPLING} == SAMPLING and "thinking" in got


def test_dropped_sampling_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="capplan.params"):
        adapt("thinking", BUDGET, {"messages": []}, temperature=0.5)
    assert "not sending temperature" in caplog.text


# --- temperature, seed, sampling flags -------------------------------------------------------


@pytest.mark.parametrize(
    ("config_temperature", "temperature", "expected"),
    [(None, None, None), (0.7, None, 0.7), (0.7, 0.2, 0.2), (None, 0.0, 0.0)],
)
def test_call_temperature_wins_over_config(config_temperature: float | None, temperature: float | None, expected: float | None) -> None:
    got = adapt("plain", OFF, config_temperature=config_temperature, temperature=temperature)
    assert got.get("temperature") == expected and ("temperature" in got) == (expected is not None)


def test_fixed_temperature_overrides_the_caller(caplog: pytest.LogCaptureFixture) -> None:
    policy = GenerationParams(fixed_temperature=1)
    with caplog.at_level(logging.WARNING, logger="capplan.params"):
        assert policy.adapt({}, 0.5, None, OFF, 0.2, None, None) == {"temperature": 1.0}
        assert policy.adapt({}, None, None, OFF, 0.3, None, None) == {"temperature": 1.0}
        assert policy.adapt({}, None, None, OFF, None, None, None) == {"temperature": 1.0}
    assert caplog.text.count("replaced by the route's fixed_temperature") == 1  # once per policy instance


@pytest.mark.parametrize(("config_seed", "seed", "expected"), [(None, None, None), (7, None, 7), (7, 3, 3), (None, 0, 0)])
def test_call_seed_wins_over_config(config_seed: int | None, seed: int | None, expected: int | None) -> None:
    got = adapt("plain", OFF, config_seed=config_seed, seed=seed)
    assert got.get("seed") == expected and ("seed" in got) == (expected is not None)


def test_seed_is_not_sent_where_unsupported(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="capplan.params"):
        assert adapt({"supports_seed": False}, OFF, config_seed=7, seed=3) == {"messages": []}
    assert "seed 3 not sent" in caplog.text


def test_sampling_params_are_never_sent_where_refused(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="capplan.params"):
        got = adapt({"supports_sampling_params": False}, ADAPTIVE, {"messages": [], **SAMPLING, "max_tokens": 5},
                    config_temperature=0.7, temperature=0.2)
    assert got == {"messages": [], "max_tokens": 5, "reasoning_effort": "high"}
    assert "not sending temperature, top_k, top_p" in caplog.text


def test_adapt_does_not_mutate_its_input() -> None:
    kwargs = {"messages": [{"role": "user", "content": "x"}], **SAMPLING, "extra_body": {"provider": {"order": ["a"]}}}
    original = copy.deepcopy(kwargs)
    got = GenerationParams(**ROUTES["thinking"]).adapt(kwargs, 0.5, 1, BUDGET, None, None, None)
    assert kwargs == original and got is not kwargs
    got = GenerationParams(**ROUTES["extra_body"]).adapt(kwargs, None, None, ADAPTIVE, None, None, None)
    assert kwargs == original
    # an existing extra_body (the OpenRouter provider pin) is kept beside the reasoning block
    assert got["extra_body"] == {"provider": {"order": ["a"]}, "reasoning": {"effort": "high", "enabled": True}}


def test_call_reasoning_wins_over_config() -> None:
    policy = GenerationParams()
    assert policy.adapt({}, None, None, ADAPTIVE, None, None, OFF) == {}
    assert policy.adapt({}, None, None, ADAPTIVE, None, None, None) == {"reasoning_effort": "high"}


@pytest.mark.parametrize(
    ("route", "kwargs", "error"),
    [
        ("extra_body", {"extra_body": {"reasoning": {"effort": "low"}}}, "already carry extra_body.reasoning"),
        ("thinking", {"thinking": {"type": "enabled", "budget_tokens": 1}}, "already carry thinking"),
    ],
)
def test_existing_reasoning_kwargs_are_never_overwritten(route: str, kwargs: dict[str, Any], error: str) -> None:
    with pytest.raises(ReasoningConfigError, match=error):
        adapt(route, ADAPTIVE if route == "extra_body" else BUDGET, kwargs)


def test_reasoning_must_be_a_reasoning_config() -> None:
    with pytest.raises(TypeError, match="ReasoningConfig"):
        GenerationParams().adapt({}, None, None, {"mode": "adaptive"}, None, None, None)  # type: ignore[arg-type]


# --- construction from plan data -------------------------------------------------------------


def test_constructs_from_plan_params() -> None:
    params: dict[str, Any] = {"supports_seed": False, "reasoning_via_thinking_kwarg": True,
                              "drop_sampling_when_thinking": True, "reasoning_budget_default": 8000}
    policy = GenerationParams(**params)
    assert (policy.supports_seed, policy.reasoning_budget_default) == (False, 8000)


@pytest.mark.parametrize(
    ("params", "error", "match"),
    [
        ({"supports_seed": "yes"}, TypeError, "supports_seed must be true or false"),
        ({"reasoning_via_extra_body": 1}, TypeError, "reasoning_via_extra_body must be true or false"),
        ({"fixed_temperature": "hot"}, TypeError, "fixed_temperature"),
        ({"fixed_temperature": -1}, TypeError, "fixed_temperature"),
        ({"reasoning_via_thinking_kwarg": True, "reasoning_budget_default": 0}, TypeError, "reasoning_budget_default"),
        ({"fixed_temperature": 0.5, "supports_sampling_params": False}, ReasoningConfigError, "contradicts"),
        ({"drop_sampling_when_thinking": True}, ReasoningConfigError, "drop_sampling_when_thinking only act"),
        ({"reasoning_budget_default": 8000}, ReasoningConfigError, "reasoning_budget_default only act"),
        ({"unsupported_effort_levels": ["medium"]}, TypeError, "unexpected keyword"),
    ],
)
def test_bad_params_are_refused(params: dict[str, Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        GenerationParams(**params)


def test_reasoning_config_error_is_a_value_error() -> None:
    assert issubclass(ReasoningConfigError, ValueError)


# --- KNOWN_KEYS is enforced when a class is defined ------------------------------------------


def test_known_keys_are_the_constructor_keywords() -> None:
    assert GenerationParams.KNOWN_KEYS == {
        "fixed_temperature", "supports_seed", "supports_sampling_params", "reasoning_via_extra_body",
        "reasoning_via_thinking_kwarg", "drop_sampling_when_thinking", "reasoning_budget_default",
        "thinking_refuses_forced_tool_choice",
    }


@pytest.mark.parametrize("choice", ["required", {"type": "function", "function": {"name": "lookup"}}])
def test_a_forced_tool_choice_beside_thinking_is_refused_where_the_route_says_so(choice: Any) -> None:
    policy = GenerationParams(reasoning_via_thinking_kwarg=True, thinking_refuses_forced_tool_choice=True)
    thinking = ReasoningConfig(mode="budget", budget_tokens=2000)
    with pytest.raises(ReasoningConfigError, match="Thinking may not be enabled when tool_choice forces tool use"):
        policy.adapt({"tool_choice": choice}, None, None, ReasoningConfig(), None, None, thinking)


@pytest.mark.parametrize("choice", ["auto", "none", None])
def test_an_unforced_tool_choice_or_reasoning_off_keeps_the_request(choice: Any) -> None:
    policy = GenerationParams(reasoning_via_thinking_kwarg=True, thinking_refuses_forced_tool_choice=True)
    thinking = ReasoningConfig(mode="budget", budget_tokens=2000)
    kwargs = {} if choice is None else {"tool_choice": choice}
    assert policy.adapt(kwargs, None, None, ReasoningConfig(), None, None, thinking)["thinking"]["budget_tokens"] == 2000
    forced = policy.adapt({"tool_choice": "required"}, None, None, ReasoningConfig(), None, None, ReasoningConfig())
    assert forced == {"tool_choice": "required"}


def test_a_concrete_subclass_without_known_keys_fails_at_definition() -> None:
    with pytest.raises(TypeError, match="must declare KNOWN_KEYS"):
        class Forgetful(ParamsPolicy):
            def adapt(self, kwargs: dict[str, Any], *args: Any) -> dict[str, Any]:
                return kwargs


def test_a_subclass_must_redeclare_known_keys() -> None:
    with pytest.raises(TypeError, match="must declare KNOWN_KEYS"):
        class Extended(GenerationParams):
            def __init__(self, extra_flag: bool = False, **kwargs: Any) -> None:
                super().__init__(**kwargs)


def test_known_keys_must_match_the_constructor() -> None:
    with pytest.raises(TypeError, match="does not match its __init__ keywords"):
        class Drifted(GenerationParams):
            KNOWN_KEYS: ClassVar[frozenset[str]] = GenerationParams.KNOWN_KEYS | {"typo_flag"}


def test_known_keys_must_be_a_frozenset_of_strings() -> None:
    with pytest.raises(TypeError, match="frozenset of strings"):
        class Listed(ParamsPolicy):
            KNOWN_KEYS = ["a"]  # type: ignore[assignment]

            def __init__(self, a: int = 0) -> None:
                pass

            def adapt(self, kwargs: dict[str, Any], *args: Any) -> dict[str, Any]:
                return kwargs


def test_abstract_intermediate_classes_need_no_known_keys() -> None:
    class Intermediate(ParamsPolicy):
        @abstractmethod
        def extra(self) -> None: ...

    class Concrete(Intermediate):
        KNOWN_KEYS: ClassVar[frozenset[str]] = frozenset({"knob"})

        def __init__(self, knob: int = 0) -> None:
            self.knob = knob

        def extra(self) -> None:
            return None

        def adapt(self, kwargs: dict[str, Any], *args: Any) -> dict[str, Any]:
            return kwargs

    assert Concrete(knob=1).knob == 1


def test_var_keyword_constructors_trust_known_keys() -> None:
    class Open(ParamsPolicy):
        KNOWN_KEYS: ClassVar[frozenset[str]] = frozenset({"anything"})

        def __init__(self, **params: Any) -> None:
            self.params = params

        def adapt(self, kwargs: dict[str, Any], *args: Any) -> dict[str, Any]:
            return kwargs

    assert Open(anything=1).params == {"anything": 1}
