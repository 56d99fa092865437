"""The preset file format (``model_presets.yaml``): default block, ordered presets, providers overlay."""

# no `from __future__ import annotations`: pydantic then reads these annotations as objects
# instead of evaluating strings, a measurable share of every command's start-up

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, StringConstraints

from capplan.compiler.inputs.common import (
    CharCount,
    HeaderValue,
    MergeByKey,
    PolicyValue,
    RetryCount,
    Strict,
    Temperature,
    TimeoutSeconds,
    TokenCount,
    TurnCount,
)
from capplan.core.default_factories import empty_dict
from capplan.executor.registry import SLOTS
from capplan.executor.value_rules import ValueRule

#: preset-block keys that name a policy: exactly the executor's slots
SLOT_KEYS: tuple[str, ...] = SLOTS

#: preset-block keys that land on the plan's loop knobs
KNOB_KEYS: tuple[str, ...] = (
    "empty_retry_count",
    "output_length_retry_count",
    "parser_error_retry_count",
    "max_context_tokens",
    "context_watermark",
    "tool_output_max_chars",
    "default_max_turns",
    "api_call_timeout_s",
)


class ParamsBlock(Strict):
    """Generation flags for the params policy, plus ``param_value_rules``.

    Keys outside the typed flags are allowed through here and then checked against the
    ``KNOWN_KEYS`` of every registered params policy, so a third-party params policy can
    declare its own flags.
    """

    # strict: `supports_seed: "yes"` or `1` is a mistake, not a truthy value
    model_config = ConfigDict(extra="allow", frozen=True, strict=True, allow_inf_nan=False, defer_build=True)

    fixed_temperature: Temperature | None = Field(None, description="Override the caller's temperature (legacy knob).")
    supports_seed: bool | None = Field(None, description="Forward `seed` when the caller or config supplies one.")
    supports_sampling_params: bool | None = Field(
        None, description="False: never send temperature / top_p / top_k (the model refuses them)."
    )
    reasoning_via_extra_body: bool | None = Field(
        None, description="Adaptive reasoning → extra_body.reasoning={effort, enabled: true} (OpenRouter path)."
    )
    reasoning_via_thinking_kwarg: bool | None = Field(
        None, description="Budget reasoning → top-level thinking={type: enabled, budget_tokens: N} (Anthropic-native)."
    )
    drop_sampling_when_thinking: bool | None = Field(
        None, description="Pop temperature / top_p / top_k whenever the thinking kwarg is emitted."
    )
    reasoning_budget_default: TokenCount | None = Field(
        None, description="budget_tokens when ReasoningConfig(mode=budget) gives none."
    )
    param_value_rules: Annotated[dict[str, dict[Any, ValueRule]], MergeByKey(depth=2)] | None = Field(
        None, description="Per parameter, per value: reject | override (with:) | drop, each with evidence."
    )


#: an OpenRouter upstream provider's name (sent in the request body's provider.order)
UpstreamName = Annotated[str, StringConstraints(min_length=1, max_length=128, pattern=r"^[^\x00-\x1f\x7f]+$")]


class OpenRouterDefaults(Strict):
    """Preset-level default for the run config's `openrouter:` block."""

    provider_order: list[UpstreamName] | None = Field(None, description="Upstream providers to pin, in order.")
    allow_fallbacks: bool | None = Field(None, description="Whether OpenRouter may fall back beyond the pin.")
    referer: HeaderValue | None = Field(None, description="HTTP-Referer attribution header (your app's URL).")
    title: HeaderValue | None = Field(None, description="X-Title attribution header (your app's name).")
    data_collection: Literal["allow", "deny"] | None = Field(
        None, description="deny (the default): route only to upstreams that do not collect prompts; allow: any upstream."
    )


class ResponsesApi(Strict):
    """Send a model through a Responses API (``POST /v1/responses``) on the routes that have one.

    Replaced whole by a later layer (the evidence belongs to the whole declaration). A route not
    listed (OpenRouter, a gateway's chat endpoint) keeps ``openai-chat`` and the preset's codec.
    """

    routes: list[Literal["openai", "xai"]] = Field(
        description="litellm providers whose Responses API the model is sent on (openai: openai-responses; "
                    "xai: xai-responses); [] keeps every route on chat completions.")
    reasoning_codec: PolicyValue = Field(description="The reasoning codec on those routes (openai_responses replays "
                                                     "encrypted reasoning items).")
    encrypted_reasoning: bool = Field(
        description="Ask for reasoning.encrypted_content (include) and replay it; false for a model that has none "
                    "(the provider refuses the include: 'Encrypted content is not supported with this model.').")
    reasoning_summary: Literal["auto", "concise", "detailed"] | None = Field(
        None, description="Ask for reasoning summaries (reasoning.summary); unset: none are asked for (OpenAI answers "
                          "an organisation it has not verified with a 400 when one is).")
    evidence: str = Field(min_length=1, max_length=2000, pattern=r"\S",
                          description="The dated source that says the model belongs on the Responses API.")


class PresetBody(Strict):
    """Everything a layer can set for a model (the `default:` block and `providers:` entries)."""

    schema_sanitizer: PolicyValue | None = Field(None, description="Tool-schema sanitiser policy.")
    prompt_policy: PolicyValue | None = Field(None, description="System-prompt enrichment policy.")
    content_policy: PolicyValue | None = Field(None, description="Tool-result content format policy.")
    params_policy: PolicyValue | None = Field(None, description="Generation-parameter policy (default generation_params).")
    response_policy: PolicyValue | None = Field(None, description="Tool-call argument post-processing policy.")
    reasoning_codec: PolicyValue | None = Field(None, description="Reasoning extract / replay codec.")
    cache_policy: PolicyValue | None = Field(None, description="Prompt-cache marker policy.")
    message_assembly_policy: PolicyValue | None = Field(None, description="Empty-assistant filler policy.")
    assistant_text_policy: PolicyValue | None = Field(None, description="Assistant-text reshaping policy.")
    params: Annotated[ParamsBlock, MergeByKey()] | None = Field(None, description="Generation flags and value rules.")
    empty_retry_count: RetryCount | None = Field(None, description="Resamples of an empty completion.")
    output_length_retry_count: RetryCount | None = Field(None, description="Resamples of a max-tokens truncation.")
    parser_error_retry_count: RetryCount | None = Field(None, description="Resamples of unparseable tool arguments.")
    max_context_tokens: TokenCount | None = Field(None, description="Context window for the summarize seam.")
    context_watermark: TokenCount | None = Field(None, description="Free-token watermark that triggers summarize.")
    tool_output_max_chars: CharCount | None = Field(None, description="Per-model cap on tool output in the prompt.")
    default_max_turns: TurnCount | None = Field(None, description="Turn budget when the task sets none.")
    api_call_timeout_s: TimeoutSeconds | None = Field(None, description="Per-attempt timeout in seconds (default 120).")
    openrouter_defaults: Annotated[OpenRouterDefaults, MergeByKey()] | None = Field(
        None, description="Default OpenRouter routing; a later layer sets only the fields it names."
    )
    responses_api: ResponsesApi | None = Field(
        None, description="Send the model through OpenAI's or xAI's Responses API where its route has one.")


#: A glob is not blank: `""` matches nothing, and `" "` nothing a model is called.
Glob = Annotated[str, StringConstraints(min_length=1, pattern=r"\S")]


class PresetEntry(PresetBody):
    """A named preset: globs that select models, then the layer it contributes."""

    match: list[Glob] = Field(min_length=1, description="fnmatch globs over the model name; first matching preset wins.")
    match_provider: list[Glob] | None = Field(
        None, min_length=1, description="Globs over the provider; a preset also matches any model of these providers."
    )


class PresetFile(Strict):
    """``model_presets.yaml``: the bundled (or --data) base file."""

    default: PresetBody | None = Field(None, description="The base layer every model starts from.")
    presets: dict[str, PresetEntry] = Field(default_factory=empty_dict, description="Ordered; first match wins.")
    providers: dict[str, PresetBody] = Field(
        default_factory=empty_dict, description="Overlay per provider (first '/' segment, lower-cased), after the preset."
    )
    requires_capplan: str | None = Field(
        None, description="PEP 440 specifier of capplan versions this data targets, e.g. '>=0.1,<1'."
    )
