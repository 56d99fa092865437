"""A provider's transport facts, the part of the plan that input files also name.

Kept apart from the plan model so reading an overlay or providers file (``capplan lint``) does
not pay for building every plan class.
"""

# no `from __future__ import annotations`: pydantic then reads these annotations as objects
# instead of evaluating strings, a measurable share of every command's start-up

from pydantic import BaseModel, ConfigDict, Field, field_validator

# the variable-name rule is core's (the compiler's checks and located errors word it the same way);
# re-exported because the plan model and its readers name it from here
from capplan.core.env_var_names import CREDENTIAL_VALUE_MESSAGE as CREDENTIAL_VALUE_MESSAGE
from capplan.core.env_var_names import env_var_name as env_var_name
from capplan.core.env_var_names import looks_like_key as looks_like_key


#: The binding's default ``max_response_bytes`` and ``max_decoded_bytes`` (see the fields).
DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_DECODED_BYTES = 64 * 1024 * 1024
#: The most either limit may be set to: 1 GiB, times --concurrency, is already a machine's memory.
MAX_LIMIT_BYTES = 1024 * 1024 * 1024


class _Frozen(BaseModel):
    # finite: a resealed plan can spell infinity as 1e999, which JSON parses without complaint
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, defer_build=True,
                              allow_inf_nan=False)


class SlugRewrite(_Frozen):
    """Two-step rewrite of the model string: strip one prefix, then ensure another."""

    strip_prefix: str | None = Field(None, description="Prefix removed when present.")
    ensure_prefix: str | None = Field(None, description="Prefix added when absent.")


class ProviderBinding(_Frozen):
    """Transport facts about a provider; looked up by the provider's first '/' segment, lower-cased.

    In an overlay's ``bindings:`` only the fields written there change the shipped binding.
    """

    endpoint: str | None = Field(None, description="Provider base URL.")
    api_base_env: str | None = Field(None, description="Env var a deployment may set to override endpoint.")
    api_key_env: str | None = Field(None, description="Primary credential env var name (never its value).")
    api_keys_env: str | None = Field(None, description="Comma-separated rotation-list env var; null disables rotation.")
    key_file_env: str | None = Field(None, description="Env var naming a fallback keys file (only with api_keys_env).")
    unroutable: bool = Field(False, description="A gateway must never carry this provider.")
    custom_llm_provider: str | None = Field(None, description="litellm routing hint pinned into every call.")
    rate_limit_patterns: tuple[str, ...] = Field((), description="Anchored regexes for last-resort 429 text matching.")
    format_model_name_bare: bool = Field(False, description="model_id is the bare name, without '<provider>/'.")
    kwargs_pin_transport: bool = Field(False, description="Pin endpoint and api_key_env into each call's kwargs.")
    slug_rewrite: SlugRewrite | None = Field(None, description="Per-attempt rewrite of the model string.")

    # -- response limits (the direct transport): what one answer may make capplan read and hold --
    # Sized for the largest real completion: 128k tokens with logprobs (top_logprobs 5) is about 400
    # bytes of JSON a token, ~50 MB; a plain 128k-token answer is ~1 MB. 64 MiB holds either with room,
    # and stops an endless or inflating body long before it takes the machine (x --concurrency).
    max_response_bytes: int = Field(
        DEFAULT_MAX_RESPONSE_BYTES, ge=1024, le=MAX_LIMIT_BYTES,
        description="Most bytes of one answer's body read off the wire (direct transport); past it the attempt "
        "fails with a provider-response error.")
    max_decoded_bytes: int = Field(
        DEFAULT_MAX_DECODED_BYTES, ge=1024, le=MAX_LIMIT_BYTES,
        description="Most bytes one answer's body may hold after its content coding (gzip, deflate) is undone "
        "(direct transport); past it the attempt fails with a provider-response error.")

    _env_names = field_validator("api_base_env", "api_key_env", "api_keys_env", "key_file_env")(env_var_name)
