"""The run config: which models to compile, with their per-run settings."""

# no `from __future__ import annotations`: pydantic then reads these annotations as objects
# instead of evaluating strings, a measurable share of every command's start-up

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, field_validator

from capplan.compiler.inputs.common import (
    MAX_TOKENS,
    HeaderValue,
    Seed,
    Strict,
    Temperature,
    TimeoutSeconds,
    TokenCount,
)
from capplan.compiler.inputs.preset_file import UpstreamName
from capplan.executor.probe import RateLimitProbeConfig
from capplan.executor.rate_limits import RateLimits
from capplan.executor.reasoning import ReasoningConfig
from capplan.core.default_factories import empty_list


class OpenRouterUserConfig(Strict):
    """The user's `openrouter:` block; merged field by field with the preset's defaults."""

    provider_order: list[UpstreamName] = Field(default_factory=empty_list, description="Upstreams to pin; empty defers to the preset.")
    allow_fallbacks: bool = Field(True, description="Whether OpenRouter may fall back beyond the pin.")
    referer: HeaderValue | None = Field(None, description="HTTP-Referer attribution header; unset defers to the preset.")
    title: HeaderValue | None = Field(None, description="X-Title attribution header; unset defers to the preset.")
    data_collection: Literal["allow", "deny"] | None = Field(
        None, description="deny: only upstreams that do not collect prompts; unset defers to the preset (default deny)."
    )


class LegacyCapabilities(Strict):
    """Legacy per-model capability switches, translated onto policies at compile time."""

    dict_map_prompt_hints: bool | None = Field(
        None, description="true → prompt_policy dict_map_hints for this model (the opt-in GPT-5-class models use)."
    )


def _bounded_budget(reasoning: ReasoningConfig) -> ReasoningConfig:
    # ReasoningConfig is the executor's (plans carry it too); the run config bounds it like every token count
    if reasoning.budget_tokens is not None and reasoning.budget_tokens > MAX_TOKENS:
        raise ValueError(f"budget_tokens must be at most {MAX_TOKENS}")
    return reasoning


class ModelConfig(Strict):
    """One model of a run."""

    provider: str = Field(min_length=1, description="Provider (openrouter, anthropic, openai, gemini, nova, mock, …).")
    name: str = Field(min_length=1, description="Model name as the provider knows it (e.g. anthropic/claude-opus-4.7).")
    temperature: Temperature | None = Field(None, description="Default sampling temperature.")
    seed: Seed | None = Field(None, description="Default seed (sent only where the preset supports it).")
    top_p: float | None = Field(None, gt=0, le=1, description="Default nucleus sampling mass.")
    max_tokens: TokenCount | None = Field(None, description="Default output token cap.")
    reasoning: Annotated[ReasoningConfig, AfterValidator(_bounded_budget)] = Field(default_factory=ReasoningConfig, description="Reasoning config.")
    parallel_tool_calls: bool | None = Field(
        None, description="Default parallel_tool_calls (sent only beside tools; ruled by param_value_rules)."
    )
    api_call_timeout_s: TimeoutSeconds | None = Field(None, description="Per-attempt timeout in seconds; beats the preset's.")
    openrouter: OpenRouterUserConfig | None = Field(None, description="OpenRouter upstream routing.")
    capabilities: LegacyCapabilities | None = Field(None, description="Legacy capability overrides.")
    transport: Literal["direct", "litellm"] | None = Field(
        None, description="Who sends this model's requests: direct (capplan's HTTP client; OpenAI-compatible chat "
        "routes only) or litellm. Default: direct on OpenAI-compatible chat routes, litellm on native ones."
    )


class EngineConfig(Strict):
    """Engine-level settings that affect compilation."""

    presets_file: str | list[str] | None = Field(
        None, description="Operator overlay file(s), relative to the run config; applied in order."
    )

    @field_validator("presets_file", mode="before")
    @classmethod
    def _file_names(cls, value: Any) -> Any:
        # one message for one mistake: the union would report a wrong type once per member
        if value is None or isinstance(value, str):
            return value
        if not isinstance(value, list):
            raise ValueError(f"must be an overlay file name or a list of them, not {_kind(value)}")
        for position, entry in enumerate(value, 1):
            if not isinstance(entry, str):
                raise ValueError(f"entry {position} must be an overlay file name, not {_kind(entry)}")
        return value


def _kind(value: Any) -> str:
    """What a YAML value is, in the words of the file (``true`` is not "a bool")."""
    if isinstance(value, bool):
        return "true/false"
    return {int: "a number", float: "a number", dict: "a mapping", list: "a list"}.get(type(value), "null")


class TrialToolChoice(Strict):
    """A ``tool_choice`` forcing one named tool."""

    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$", description="The tool every task's agent must call.")


class TrialChoices(Strict):
    """The run's loop choices for every task (`capplan trial run --config`); each one set wins over the task's own."""

    tool_choice: Literal["auto", "required", "none"] | TrialToolChoice | None = Field(
        None, description="Sent with every agent request that carries tools, instead of the task's tool_choice; "
        "a named tool must be one every task declares.")
    parallel_tool_calls: bool | None = Field(
        None, description="Sent with every agent request that carries tools, instead of the task's.")
    tool_timeout_s: TimeoutSeconds | None = Field(
        None, description="Seconds a tool call may take, instead of the task's tool_timeout_s (a tool's own "
        "timeout_s still wins).")


class RunConfig(Strict):
    """A run config (also the format of the bundled model catalogue)."""

    models: dict[str, ModelConfig] = Field(min_length=1, description="Model key (the plan's file stem) → model.")
    engine: EngineConfig = Field(default_factory=EngineConfig, description="Engine settings.")
    rate_limit_probe: RateLimitProbeConfig | None = Field(
        None,
        description="Run policy, not a model property: when enabled, the run's agent calls absorb 429s at a fixed, "
        "jittered interval for up to per_call_budget_s each, and record probe telemetry. Never part of a plan, and "
        "no environment variable arms it.",
    )
    rate_limits: RateLimits = Field(
        default_factory=RateLimits,
        description="Run-wide call limits per provider and per key, shared by every trial worker "
        "(`capplan trial run --config`); never part of a plan.",
    )
    trials: TrialChoices = Field(
        default_factory=TrialChoices,
        description="Loop choices for every task of a `capplan trial run --config` (tool_choice, "
        "parallel_tool_calls, tool_timeout_s), each winning over the task's own; never part of a plan.",
    )
