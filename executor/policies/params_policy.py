"""Generation parameters: temperature, seed, sampling and the reasoning routing matrix.

:class:`GenerationParams` turns the caller's settings (falling back to the run config's) into
the kwargs a route accepts. Which reasoning kwargs it emits:

==========  =========================  ===========================  ===================
``mode``    thinking-kwarg route       ``reasoning_via_extra_body``  plain route
==========  =========================  ===========================  ===================
off         nothing                    nothing                      nothing
adaptive    ReasoningConfigError       ``extra_body.reasoning``     ``reasoning_effort``
                                       ``{effort, enabled}``
budget      ``thinking`` + drop        ``extra_body.reasoning``     effort fallback
            sampling (if flagged)      ``{max_tokens, enabled}`` +
                                       drop sampling (if flagged)
==========  =========================  ===========================  ===================

``reasoning_via_extra_body`` wins over ``reasoning_via_thinking_kwarg`` (Claude 4.7 over
OpenRouter): OpenRouter's documented reasoning control is the ``reasoning`` body object, which
takes ``max_tokens`` for a budget and translates ``effort`` into a budget for Anthropic models
(https://openrouter.ai/docs/use-cases/reasoning-tokens); a top-level ``thinking`` kwarg is not
part of its API. The same precedence is tolokaforge 0.29.0's.

The budget is ``budget_tokens``, else the route's ``reasoning_budget_default``. On the
thinking-kwarg route a budget config with neither is a :class:`ReasoningConfigError`. On an
``extra_body`` route with neither, and on a plain route (OpenAI has no canonical budget kwarg),
budget mode falls back to its ``effort_hint``, and without one sends nothing: a value the user
gave is forwarded, a value they did not give is never invented. That case, dropped sampling
parameters and an unsent seed are logged once per policy instance.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from typing import Any, ClassVar

from pydantic import Field

from capplan.executor.errors import ReasoningError
from capplan.executor.policy_params import PolicyParams
from capplan.executor.reasoning import ReasoningConfig
from capplan.core.value_types import MAX_TOKENS

LOGGER_NAME = "capplan.params"

#: Sampling parameters a route may refuse as a group.
SAMPLING_PARAMS: tuple[str, ...] = ("temperature", "top_p", "top_k")

#: The highest temperature any provider accepts (OpenAI and Gemini: 2; Anthropic: 1).
MAX_TEMPERATURE = 2.0


class ReasoningConfigError(ReasoningError):
    """A reasoning config (or a params flag set) the route cannot express as a request."""


def _declares_abstract(cls: type) -> bool:
    # ABCMeta fills __abstractmethods__ only after __init_subclass__ has run, so recompute it
    names = {name for base in cls.__mro__[1:] for name in getattr(base, "__abstractmethods__", ())}
    names |= {name for name, value in vars(cls).items() if getattr(value, "__isabstractmethod__", False)}
    return any(getattr(getattr(cls, name, None), "__isabstractmethod__", False) for name in names)


class ParamsPolicy(ABC):
    """Adapts generation kwargs for one route.

    Every concrete subclass declares, in its own class body, ``KNOWN_KEYS``: the constructor
    keywords it accepts, which are exactly the ``params:`` keys a preset may set for it. A class
    that lacks it, or whose ``KNOWN_KEYS`` disagrees with its ``__init__``, is refused with a
    ``TypeError`` when the class is defined, so the validator and the constructor cannot drift.
    """

    slot: ClassVar[str] = "params_policy"
    name: ClassVar[str]
    KNOWN_KEYS: ClassVar[frozenset[str]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if _declares_abstract(cls):
            return
        known = vars(cls).get("KNOWN_KEYS")
        if known is None:
            raise TypeError(f"{cls.__qualname__} must declare KNOWN_KEYS: ClassVar[frozenset[str]] in its class body")
        if not isinstance(known, frozenset) or not all(isinstance(key, str) for key in known):
            raise TypeError(f"{cls.__qualname__}.KNOWN_KEYS must be a frozenset of strings, got {known!r}")
        params = inspect.signature(cls.__init__).parameters.values()
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
            return  # **kwargs: the constructor accepts whatever KNOWN_KEYS says
        accepted = {
            p.name
            for p in params
            if p.name != "self" and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        }
        if accepted != known:
            raise TypeError(
                f"{cls.__qualname__}.KNOWN_KEYS {sorted(known)} does not match its __init__ keywords {sorted(accepted)}"
            )

    @abstractmethod
    def adapt(
        self,
        kwargs: dict[str, Any],
        config_temperature: float | None,
        config_seed: int | None,
        config_reasoning: ReasoningConfig,
        temperature: float | None,
        seed: int | None,
        reasoning: ReasoningConfig | None,
    ) -> dict[str, Any]:
        """A new kwargs dict for the call; call-level values win over the config's."""


class GenerationParams(ParamsPolicy):
    """The preset-driven flags that shape temperature, seed, sampling and reasoning kwargs."""

    name: ClassVar[str] = "generation_params"

    class Params(PolicyParams):
        """The ``params:`` flags of ``generation_params``."""

        fixed_temperature: float | None = Field(
            None, ge=0, le=MAX_TEMPERATURE, description="Send this temperature whatever the caller asks for."
        )
        supports_seed: bool = Field(True, description="Forward `seed` when the caller or run config gives one.")
        supports_sampling_params: bool = Field(
            True, description="False: never send temperature / top_p / top_k (the model refuses them)."
        )
        reasoning_via_extra_body: bool = Field(
            False, description="Adaptive reasoning as extra_body.reasoning={effort, enabled} (OpenRouter)."
        )
        reasoning_via_thinking_kwarg: bool = Field(
            False, description="Budget reasoning as thinking={type: enabled, budget_tokens} (Anthropic-native)."
        )
        drop_sampling_when_thinking: bool = Field(
            False, description="Drop temperature / top_p / top_k whenever thinking is sent."
        )
        reasoning_budget_default: int | None = Field(
            None, gt=0, le=MAX_TOKENS, description="budget_tokens when a budget reasoning config gives none."
        )
        thinking_refuses_forced_tool_choice: bool = Field(
            False, description="The route refuses a forced tool_choice (required or a named tool) while the model "
            "thinks: such a request is refused before sending."
        )

    KNOWN_KEYS: ClassVar[frozenset[str]] = frozenset(Params.model_fields)

    def __init__(
        self,
        fixed_temperature: float | None = None,
        supports_seed: bool = True,
        supports_sampling_params: bool = True,
        reasoning_via_extra_body: bool = False,
        reasoning_via_thinking_kwarg: bool = False,
        drop_sampling_when_thinking: bool = False,
        reasoning_budget_default: int | None = None,
        thinking_refuses_forced_tool_choice: bool = False,
    ) -> None:
        flags = {
            "supports_seed": supports_seed,
            "supports_sampling_params": supports_sampling_params,
            "reasoning_via_extra_body": reasoning_via_extra_body,
            "reasoning_via_thinking_kwarg": reasoning_via_thinking_kwarg,
            "drop_sampling_when_thinking": drop_sampling_when_thinking,
            "thinking_refuses_forced_tool_choice": thinking_refuses_forced_tool_choice,
        }
        for key, value in flags.items():
            if not isinstance(value, bool):
                raise TypeError(f"{key} must be true or false, got {value!r}")
        if fixed_temperature is not None and (
            isinstance(fixed_temperature, bool)
            or not isinstance(fixed_temperature, (int, float))
            or fixed_temperature < 0
        ):
            raise TypeError(f"fixed_temperature must be a non-negative number, got {fixed_temperature!r}")
        if reasoning_budget_default is not None and (
            isinstance(reasoning_budget_default, bool)
            or not isinstance(reasoning_budget_default, int)
            or reasoning_budget_default <= 0
        ):
            raise TypeError(f"reasoning_budget_default must be a positive integer, got {reasoning_budget_default!r}")
        # a flag nothing would ever read is a mis-configuration, not a choice
        if fixed_temperature is not None and not supports_sampling_params:
            raise ReasoningConfigError("fixed_temperature contradicts supports_sampling_params: false")
        if not (reasoning_via_thinking_kwarg or reasoning_via_extra_body):
            inert = [
                key
                for key, set_ in (
                    ("drop_sampling_when_thinking", drop_sampling_when_thinking),
                    ("reasoning_budget_default", reasoning_budget_default is not None),
                )
                if set_
            ]
            if inert:
                raise ReasoningConfigError(
                    f"{', '.join(inert)} only act with reasoning_via_thinking_kwarg or reasoning_via_extra_body, "
                    "neither of which is set"
                )
        self.fixed_temperature = None if fixed_temperature is None else float(fixed_temperature)
        self.supports_seed = supports_seed
        self.supports_sampling_params = supports_sampling_params
        self.reasoning_via_extra_body = reasoning_via_extra_body
        self.reasoning_via_thinking_kwarg = reasoning_via_thinking_kwarg
        self.drop_sampling_when_thinking = drop_sampling_when_thinking
        self.reasoning_budget_default = reasoning_budget_default
        self.thinking_refuses_forced_tool_choice = thinking_refuses_forced_tool_choice
        self._noted: set[str] = set()

    def adapt(
        self,
        kwargs: dict[str, Any],
        config_temperature: float | None,
        config_seed: int | None,
        config_reasoning: ReasoningConfig,
        temperature: float | None,
        seed: int | None,
        reasoning: ReasoningConfig | None,
    ) -> dict[str, Any]:
        """Temperature, seed and reasoning kwargs merged into a copy of ``kwargs``."""
        out = dict(kwargs)
        self._temperature(out, temperature if temperature is not None else config_temperature)
        self._seed(out, seed if seed is not None else config_seed)
        active = reasoning if reasoning is not None else config_reasoning
        if not isinstance(active, ReasoningConfig):
            raise TypeError(f"reasoning must be a ReasoningConfig, got {type(active).__name__}")
        self._reasoning(out, active)
        if self.thinking_refuses_forced_tool_choice and active.mode != "off":
            _refuse_forced_tool_choice(out.get("tool_choice"))
        return out

    def _temperature(self, out: dict[str, Any], requested: float | None) -> None:
        if not self.supports_sampling_params:
            dropped = {key for key in SAMPLING_PARAMS if out.pop(key, None) is not None}
            if requested is not None:
                dropped.add("temperature")
            if dropped:
                self._note_once(
                    "sampling",
                    "this route refuses sampling parameters (supports_sampling_params: false); "
                    f"not sending {', '.join(sorted(dropped))}",
                )
            return
        if self.fixed_temperature is not None:
            if requested is not None and requested != self.fixed_temperature:
                self._note_once(
                    "fixed_temperature",
                    f"temperature {requested!r} replaced by the route's fixed_temperature {self.fixed_temperature!r}",
                )
            out["temperature"] = self.fixed_temperature
        elif requested is not None:
            out["temperature"] = requested

    def _seed(self, out: dict[str, Any], requested: int | None) -> None:
        if requested is None:
            return
        if self.supports_seed:
            out["seed"] = requested
        else:
            self._note_once("seed", f"this route takes no seed (supports_seed: false); seed {requested!r} not sent")

    def _reasoning(self, out: dict[str, Any], cfg: ReasoningConfig) -> None:
        if cfg.mode == "off":
            return
        budget = cfg.budget_tokens if cfg.budget_tokens is not None else self.reasoning_budget_default
        if self.reasoning_via_extra_body:
            if cfg.mode == "budget" and budget is not None:
                self._extra_body_reasoning(out, {"max_tokens": budget})
                self._drop_sampling_for_thinking(out)
            elif cfg.effort_hint is not None:
                self._extra_body_reasoning(out, {"effort": cfg.effort_hint})
            else:
                self._budget_without_effort()
            return
        if self.reasoning_via_thinking_kwarg:
            if cfg.mode == "adaptive":
                raise ReasoningConfigError(
                    "reasoning mode 'adaptive' on a thinking-kwarg route (reasoning_via_thinking_kwarg: true): "
                    "this model takes a token budget, not an effort level; use "
                    "ReasoningConfig(mode='budget', budget_tokens=N)"
                )
            if budget is None:
                raise ReasoningConfigError(
                    "reasoning mode 'budget' without budget_tokens, and the route declares no "
                    "reasoning_budget_default; set ReasoningConfig(mode='budget', budget_tokens=N)"
                )
            if "thinking" in out:
                raise ReasoningConfigError(f"kwargs already carry thinking={out['thinking']!r}; refusing to overwrite")
            out["thinking"] = {"type": "enabled", "budget_tokens": budget}
            self._drop_sampling_for_thinking(out)
            return
        if cfg.effort_hint is None:
            self._budget_without_effort()
            return
        out["reasoning_effort"] = cfg.effort_hint

    def _extra_body_reasoning(self, out: dict[str, Any], fields: dict[str, Any]) -> None:
        extra_body = dict(out.get("extra_body") or {})
        if "reasoning" in extra_body:
            raise ReasoningConfigError(
                f"kwargs already carry extra_body.reasoning={extra_body['reasoning']!r}; refusing to overwrite"
            )
        extra_body["reasoning"] = {**fields, "enabled": True}
        out["extra_body"] = extra_body

    def _drop_sampling_for_thinking(self, out: dict[str, Any]) -> None:
        if not self.drop_sampling_when_thinking:
            return
        dropped = sorted(key for key in SAMPLING_PARAMS if out.pop(key, None) is not None)
        if dropped:
            self._note_once(
                "sampling_when_thinking",
                f"thinking is on and the route refuses sampling with it; not sending {', '.join(dropped)}",
            )

    def _budget_without_effort(self) -> None:
        # budget mode with no budget this route can carry and no effort level: nothing is invented
        self._note_once(
            "budget_without_effort",
            "reasoning mode 'budget' with no budget this route can carry and no effort_hint to fall back "
            "on: no reasoning parameter is sent",
        )

    def _note_once(self, key: str, message: str) -> None:
        # per instance (one per plan): a run of thousands of calls warns once per cause, not per call
        if key not in self._noted:
            self._noted.add(key)
            import logging  # here: compiling imports this module and never warns, and logging costs start-up

            logging.getLogger(LOGGER_NAME).warning("%s", message)


def _refuse_forced_tool_choice(choice: Any) -> None:
    """Refuse a forced ``tool_choice`` beside thinking, before the provider does.

    Anthropic answers "Thinking may not be enabled when tool_choice forces tool use." (conformance
    rule anthropic.thinking_forced_tool_choice); changing the choice to ``auto`` would quietly
    change what the caller asked for, so the request is refused with the ways out.
    """
    forced = choice == "required" or isinstance(choice, dict)
    if forced:
        shown = choice if isinstance(choice, str) else "a named tool"
        raise ReasoningConfigError(
            f"tool_choice {shown!r} forces tool use while the model thinks, which this route refuses "
            "(\"Thinking may not be enabled when tool_choice forces tool use.\", conformance rule "
            "anthropic.thinking_forced_tool_choice); ask with tool_choice 'auto' or 'none', or with reasoning off"
        )
