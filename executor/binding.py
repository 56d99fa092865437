"""A provider's transport facts, the part of the plan that input files also name.

Kept apart from the plan model so reading an overlay or providers file (``capplan lint``) does
not pay for building every plan class.
"""

# no `from __future__ import annotations`: pydantic then reads these annotations as objects
# instead of evaluating strings, a measurable share of every command's start-up

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

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


#: The most a binding may let a provider's ``Retry-After`` hold one retry back (seconds).
RETRY_AFTER_MAX_S_CEILING = 300.0
#: A binding's ``retry_after_max_s`` when it sets none.
DEFAULT_RETRY_AFTER_MAX_S = 60.0
#: Bounds on a failure rule's texts (rules are data from files a pull request can change).
_MAX_RULE_TEXT = 500


class FailureRule(_Frozen):
    """One answer that says the call's setup is wrong, not the model: never retried, never graded, the run stops.

    Matched against every link of a failed call's error (its HTTP status off the wire, and its text,
    which quotes the provider's error message): ``status`` (any when null) and ``contains`` (a
    substring) or ``pattern`` (a regex searched in the text, anchored on the provider's own wording).
    ``evidence`` says where the wording was seen (a public source and a date), as every rule
    in capplan's data does.
    """

    status: int | None = Field(None, ge=100, le=599, description="HTTP status the answer carries; null: any status.")
    contains: str | None = Field(None, min_length=8, max_length=_MAX_RULE_TEXT,
                                 description="A substring of the error text (case-sensitive).")
    pattern: str | None = Field(None, min_length=8, max_length=_MAX_RULE_TEXT,
                                description="A regex searched in the error text, anchored on the provider's wording.")
    failure_class: Literal["configuration", "infrastructure"] = Field(
        alias="class", description="configuration: a key, model or route the provider refused; infrastructure: "
        "something other than the provider answered. Both stop a trial run as a 401 does.")
    problem: str = Field(min_length=3, max_length=200, description="What is wrong, in a few words (shown to the user).")
    evidence: str = Field(min_length=10, max_length=_MAX_RULE_TEXT,
                          description="Where the wording was observed: a public source and a date.")

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"not a regular expression: {exc}") from None
        return value

    @model_validator(mode="after")
    def _one_text(self) -> "FailureRule":
        if (self.contains is None) == (self.pattern is None):
            raise ValueError("give exactly one of contains or pattern")
        return self


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
    # how this provider's failures are classified and retried (kept together: docs/requests.md)
    failure_rules: tuple[FailureRule, ...] = Field(
        (), max_length=64, description="Answers that mean the setup is wrong (configuration or infrastructure), "
        "each with its evidence; such a failure is never retried and stops a trial run.")
    retry_after_max_s: float = Field(
        DEFAULT_RETRY_AFTER_MAX_S, gt=0, le=RETRY_AFTER_MAX_S_CEILING,
        description="The longest wait a provider's Retry-After may ask for before a retry, in seconds; a longer "
        "one is cut to this (both are recorded on the attempt).")

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
