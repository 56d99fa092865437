"""An overlay's ``probe_evidence:`` block: what ``capplan probe`` measured, per route, as data.

One entry per probed route: the route's identity (provider key, wire protocol, model as the
request named it, gateway route, endpoint URL, transport), the date and capplan version, and per
measured value of a rulable parameter its outcome, HTTP status, the provider's exact error text
and the request's fingerprint. :mod:`capplan.compiler.probe_evidence` turns an entry into the
``param_value_rules`` of the plans on that route, and only of those.
"""

# no `from __future__ import annotations`: pydantic then reads these annotations as objects
# instead of evaluating strings, a measurable share of every command's start-up

import datetime as _dt
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints, field_validator, model_validator

from capplan.compiler.inputs.common import Strict
from capplan.core.default_factories import empty_dict
from capplan.core.value_types import http_url_problem

#: the wire protocols a probe asks (``capplan.probes.runner.PROBED_PROTOCOLS``)
ProbedProtocol = Literal["openai-chat", "openai-responses", "xai-responses"]
#: the parameters a ``param_value_rules`` entry can hold (``capplan.executor.value_rules.RULABLE_PARAMS``)
RulableParam = Literal["tool_choice", "reasoning_effort", "temperature", "top_p", "parallel_tool_calls"]
#: the most characters of error text kept: the probe keeps 1000 and a "… (N more characters)" tail, and
#: its snippet spells each unprintable character as a six-character escape
MAX_ERROR_TEXT = 6100
#: entries per overlay file: one per probed route, far past any catalogue
MAX_ROUTES = 1000

OneLine = Annotated[str, StringConstraints(min_length=1, max_length=256, pattern=r"^[^\x00-\x1f\x7f]+$")]


class ProbedValue(Strict):
    """What the route answered for one value of one parameter."""

    outcome: Literal["refused", "accepted"] = Field(
        description="refused: the route answered 4xx about the value; accepted: it answered 2xx.")
    status: int = Field(ge=200, le=499, description="The HTTP status the route answered.")
    error: str | None = Field(None, min_length=1, max_length=MAX_ERROR_TEXT,
                              description="The provider's exact error text (refused only; secrets redacted).")
    fingerprint: str = Field(pattern=r"^[0-9a-f]{64}$",
                             description="sha256 of the canonical JSON request body that was sent.")

    @model_validator(mode="after")
    def _outcome_matches_status(self) -> "ProbedValue":
        if self.outcome == "refused":
            if not 400 <= self.status <= 499 or self.status == 429:
                raise ValueError("a refusal is a 4xx answer other than 429 (a 429 or 5xx measured nothing)")
            if self.error is None:
                raise ValueError("a refusal needs `error:`, the provider's exact error text")
        elif not 200 <= self.status <= 299:
            raise ValueError("an accepted value is a 2xx answer")
        elif self.error is not None:
            raise ValueError("`error:` belongs to a refusal; an accepted value has none")
        return self


class ProbedRoute(Strict):
    """One route a probe asked, and what it answered about each value."""

    provider: OneLine = Field(description="The provider key (binding) of the route, e.g. openai.")
    protocol: ProbedProtocol = Field(description="The wire protocol the requests were sent in.")
    model: OneLine = Field(description="The model name as the request body named it.")
    gateway_route: OneLine | None = Field(None, description="The gateway route the calls went through, if any.")
    endpoint: str = Field(min_length=1, max_length=2048, description="The URL the requests were sent to "
                          "(recorded and shown; not matched: the base URL is a run-time choice).")
    transport: Literal["direct", "litellm"] = Field("direct", description="Which HTTP client sent the requests.")
    date: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$", description="The day of the probe (YYYY-MM-DD, UTC).")
    capplan_version: OneLine = Field(description="The capplan version that probed.")
    plan: OneLine | None = Field(None, description="The model key of the plan that was probed (informational).")
    values: dict[RulableParam, dict[Any, ProbedValue]] = Field(
        default_factory=empty_dict, description="Parameter → value (keyed as param_value_rules keys it) → what the "
        "route answered.")

    @field_validator("date", mode="before")
    @classmethod
    def _unquoted_date(cls, value: object) -> object:
        # YAML reads an unquoted 2026-11-02 as a date: the same day, as the probe writes it
        if isinstance(value, _dt.date) and not isinstance(value, _dt.datetime):
            return value.isoformat()
        return value

    @field_validator("date")
    @classmethod
    def _calendar_date(cls, value: str) -> str:
        try:
            _dt.date.fromisoformat(value)
        except ValueError:
            raise ValueError("not a calendar date; write YYYY-MM-DD") from None
        return value

    @field_validator("endpoint")
    @classmethod
    def _endpoint(cls, value: str) -> str:
        problem = http_url_problem(value)
        if problem is not None:
            raise ValueError(f"endpoint {problem}")
        return value

    def route_text(self) -> str:
        """``openai-responses https://… model gpt-5 (provider openai)``, as the probe's evidence reads."""
        via = f" via gateway route {self.gateway_route}" if self.gateway_route else ""
        return f"{self.protocol} {self.endpoint} model {self.model}{via} (provider {self.provider})"


class ProbeChecks(Strict):
    """How lint judges recorded probe evidence."""

    max_age_days: int = Field(180, ge=1, le=36500, description="Probe evidence older than this is a lint warning.")


ProbeEvidence = Annotated[list[ProbedRoute], Field(max_length=MAX_ROUTES)]
