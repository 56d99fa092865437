"""What one generation produced, as the executor hands it to its callers.

Everything here is frozen: a result is a record of one provider call, so nothing downstream may
edit it. Records of what went wrong (parser errors, schema violations, value substitutions) ride
beside the data they describe instead of replacing it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from capplan.executor.messages import ReasoningIn
from capplan.executor.reasoning import ReasoningLeftOut, StructuredReasoning
from capplan.executor.usage import Usage
from capplan.executor.value_rules import Substitution

#: Where ``cost_usd`` came from: the provider via litellm, our pricing table, or nowhere.
CostSource = Literal["litellm", "pricing", "unknown"]

#: Raw tool-call arguments are quoted in a ParserError up to this many characters, so a long
#: garbage payload does not inflate a feedback turn built from it.
PARSER_ERROR_RAW_ARGS_EXCERPT_MAX_CHARS = 500


@dataclass(frozen=True)
class ToolCall:
    """One tool call as the tool should receive it (after the response policy)."""

    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str = field(repr=False, default="")


@dataclass(frozen=True)
class ArgumentRepair:
    """A tool call whose argument string was not JSON and was decoded by a later rung of the ladder.

    The call is kept and executed with the decoded arguments; this record keeps what the model
    actually sent (cut to the excerpt bound) and which rung read it, so a truncated payload that
    was closed by the repair is visible rather than silently executed.
    """

    tool_call_id: str
    tool_name: str
    raw_arguments: str
    rung: str

    @classmethod
    def from_raw(cls, tool_call_id: str, tool_name: str, raw_arguments: str, rung: str) -> ArgumentRepair:
        """Build the record with the raw arguments cut to the excerpt bound."""
        return cls(tool_call_id, tool_name, raw_arguments[:PARSER_ERROR_RAW_ARGS_EXCERPT_MAX_CHARS], rung)


AttemptStatus = Literal["ok", "error"]


@dataclass(frozen=True)
class Attempt:
    """One provider call as it went over the wire: the outer controller's and the timeout retry's included.

    ``wait_s`` is the backoff slept before this attempt (0 for the first); ``latency_s`` the
    attempt's own round trip; ``retry_after_s`` what a failed attempt's ``Retry-After`` asked for. ``error_class`` is the retry-relevant kind of a failure
    (:func:`capplan.executor.attempts.error_class`), ``error_type`` its exception's name. No
    key value is ever part of it: ``key_index`` names the rotation slot only.
    """

    status: AttemptStatus
    wait_s: float
    latency_s: float
    error_class: str | None = None
    error_type: str | None = None
    key_index: int | None = None
    #: names the send (:class:`capplan.executor.send_observer.Send`) this attempt is the outcome of
    request_id: str | None = None
    #: The ``Retry-After`` seconds a failed attempt's answer asked for, as sent (the next attempt's
    #: ``wait_s`` is what was waited: at most the binding's ``retry_after_max_s``).
    retry_after_s: float | None = None


@dataclass(frozen=True)
class ParserError:
    """A tool call whose argument string no parser on the ladder accepted; its arguments became ``{}``."""

    tool_name: str
    raw_arguments: str
    reason: str

    @classmethod
    def from_raw(cls, tool_name: str, raw_arguments: str, reason: str) -> ParserError:
        """Build the record with the raw arguments cut to the excerpt bound."""
        return cls(tool_name, raw_arguments[:PARSER_ERROR_RAW_ARGS_EXCERPT_MAX_CHARS], reason)


@dataclass(frozen=True)
class SchemaViolation:
    """Arguments the model emitted that break the (sanitised) schema it was shown for that tool."""

    tool_call_id: str
    tool_name: str
    path: str
    message: str


@dataclass(frozen=True)
class GenerationResult:
    """The parsed outcome of one provider call."""

    text: str
    tool_calls: tuple[ToolCall, ...]
    usage: Usage
    latency_s: float
    cost_usd: float | None
    cost_source: CostSource
    reasoning: StructuredReasoning | None
    effective_system_prompt: str
    finish_reason: str | None
    parser_errors: tuple[ParserError, ...] = ()
    validation_errors: tuple[SchemaViolation, ...] = ()
    openrouter_generation_id: str | None = None
    value_substitutions: tuple[Substitution, ...] = ()
    #: history reasoning blocks that were not replayed to this model, and why
    reasoning_left_out: tuple[ReasoningLeftOut, ...] = ()
    guard_rejections: tuple[Any, ...] = ()
    #: The gateway route name the call was addressed by; None when no gateway was used.
    gateway_route: str | None = None
    #: How the route was chosen: exact / wildcard / untranslated / direct; None without a gateway.
    gateway_route_kind: str | None = None
    #: Which key of the binding's rotation chain served the call (an index, never the key).
    key_index: int | None = None
    #: Tool calls decoded by a rung past plain JSON (the calls themselves are in ``tool_calls``).
    argument_repairs: tuple[ArgumentRepair, ...] = ()
    #: Every provider attempt this generation made, in order; the last is the one that answered.
    attempts: tuple[Attempt, ...] = ()
    #: Backoff slept between the attempts; ``latency_s`` includes it.
    wait_s: float = 0.0
    #: What the provider's answer reported out of bounds (usage counters, cost), one line each; what
    #: they name is ``None`` (unknown) in ``usage`` and ``cost_usd``.
    response_problems: tuple[str, ...] = ()
    #: The provider's id of the answer (``resp_…`` on a Responses route, ``chatcmpl-…`` on chat); None when it sent none.
    response_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-safe dict of the whole result (for ``capplan send`` and trajectory writers)."""
        data = asdict(self)
        data["usage"] = asdict(self.usage)
        if self.reasoning is not None:
            # the request-file shape, so a printed result can be pasted into the next turn
            data["reasoning"] = ReasoningIn.from_structured(self.reasoning).model_dump(mode="json")
        data["value_substitutions"] = [_record_json(s) for s in self.value_substitutions]
        data["guard_rejections"] = [_record_json(g) for g in self.guard_rejections]
        for call in data["tool_calls"]:
            call.pop("raw_arguments")
        return data


def _record_json(record: Any) -> Any:
    if hasattr(record, "model_dump"):
        return record.model_dump(mode="json")
    if hasattr(record, "__dataclass_fields__"):
        return asdict(record)
    return record
