"""Provider-agnostic reasoning types: what a caller asks for, and what a response carried."""

# no `from __future__ import annotations`: pydantic then reads these annotations as objects
# instead of evaluating strings, a measurable share of every command's start-up

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

ReasoningMode = Literal["off", "adaptive", "budget"]
ReasoningDisplay = Literal["visible", "summary", "omitted"]
EffortLevel = Literal["minimal", "low", "medium", "high", "xhigh"]


class ReasoningConfig(BaseModel):
    """How much a model should reason. Lives on the model config; never a bare string."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    mode: ReasoningMode = Field("off", description="off | adaptive (effort level) | budget (token budget).")
    budget_tokens: int | None = Field(
        None, gt=0, description="Thinking budget for mode=budget; the preset's reasoning_budget_default applies when unset."
    )
    effort_hint: EffortLevel | None = Field(
        None, description="Effort level: required for mode=adaptive, the effort fallback for mode=budget on non-thinking routes."
    )
    display: ReasoningDisplay = Field("visible", description="How the provider should surface the reasoning text.")

    @model_validator(mode="after")
    def _adaptive_needs_effort(self) -> "ReasoningConfig":
        # an adaptive request without a level would leave the provider to pick one silently
        if self.mode == "adaptive" and self.effort_hint is None:
            raise ValueError("reasoning mode 'adaptive' needs effort_hint (minimal|low|medium|high|xhigh)")
        return self


BlockType = Literal["thinking", "redacted_thinking", "summary_text", "reasoning_text", "encrypted"]


@dataclass(frozen=True)
class ReasoningOrigin:
    """Where a piece of reasoning was made: the one place an opaque carrier of it verifies.

    A signature, an encrypted payload or a Gemini thought signature is minted by one provider
    route for one model; replayed anywhere else it is refused (Anthropic: ``Invalid `signature`
    in `thinking` block``) or silently misread. ``protocol`` is the plan's wire protocol,
    ``route`` its binding (the provider key when the binding has none), ``model`` the model as
    the plan sends it, and ``upstream`` the provider a gateway says served the call (OpenRouter's
    ``provider``), or ``None`` when the response names none.
    """

    protocol: str
    route: str
    model: str
    upstream: str | None = None

    def mismatch(self, target: "ReasoningOrigin") -> str | None:
        """What differs between this origin and ``target`` (model, route, upstream), or ``None``.

        The upstream is compared only when both name one: a request to an unpinned gateway
        route does not know which upstream will serve it, so it cannot call a carrier foreign.
        Upstream names compare by letters and digits alone, case-folded: OpenRouter answers with a
        display name (``Moonshot AI``) where a pin names a slug (``moonshotai``).
        """
        if (self.protocol, self.route) != (target.protocol, target.route):
            return "route"
        if self.model != target.model:
            return "model"
        if (self.upstream is not None and target.upstream is not None
                and _upstream_key(self.upstream) != _upstream_key(target.upstream)):
            return "upstream"
        return None

    def label(self) -> str:
        """``route/model`` (``via upstream`` when known), for the reason a block was left out."""
        via = f" via {self.upstream}" if self.upstream else ""
        return f"{self.route} ({self.protocol}) {self.model}{via}"


def _upstream_key(name: str) -> str:
    return "".join(ch for ch in name.casefold() if ch.isalnum())


@dataclass(frozen=True)
class ReasoningBlock:
    """One unit of reasoning as the provider returned it; signatures and opaque data verbatim.

    ``extras`` holds the keys of the provider's entry that have no field here (OpenRouter's
    ``id`` / ``format`` / ``index`` on a ``reasoning_details`` entry), as ``(key, value)`` pairs
    in the order received. Codecs replay them verbatim: an entry's ``id`` can name the tool call
    its reasoning belongs to, so dropping them would change what the next turn tells the provider.
    """

    type: BlockType
    text: str = ""
    signature: str | None = None
    encrypted_data: str | None = None
    extras: tuple[tuple[str, Any], ...] = ()
    #: where the block was made (set when a response is parsed; ``None`` for a caller's history
    #: that does not say, which is then replayed as the caller gave it)
    origin: ReasoningOrigin | None = None

    @property
    def origin_bound(self) -> bool:
        """Whether the block carries something only its origin can verify or read.

        A signature, an encrypted payload, Anthropic's redacted thinking and an OpenRouter
        ``reasoning.encrypted`` entry are bound; plain text is not (any route that reads
        reasoning text may be sent it).
        """
        return (self.signature is not None or self.encrypted_data is not None
                or self.type in ("redacted_thinking", "encrypted"))


@dataclass(frozen=True)
class StructuredReasoning:
    """Reasoning extracted from one response: ordered blocks plus an optional summary.

    ``signatures`` are opaque signatures the provider attached to the message rather than to a
    block (Gemini's ``thoughtSignature`` on text and function-call parts, which litellm lists in
    ``provider_specific_fields.thought_signatures``), in the order received, replayed verbatim.
    """

    blocks: tuple[ReasoningBlock, ...] = ()
    summary: str | None = None
    budget_used: int | None = None
    signatures: tuple[str, ...] = ()
    #: where ``signatures`` were made (``None`` when unknown: replayed as given)
    signatures_origin: ReasoningOrigin | None = None

    def with_origin(self, origin: ReasoningOrigin) -> "StructuredReasoning":
        """This reasoning with ``origin`` recorded on every block and on the message's signatures."""
        blocks = tuple(dataclasses.replace(block, origin=origin) for block in self.blocks)
        return dataclasses.replace(self, blocks=blocks, signatures_origin=origin if self.signatures else None)


@dataclass(frozen=True)
class ReasoningLeftOut:
    """A reasoning block of the history that was not replayed, and why.

    ``message`` indexes the request's ``messages``, ``block`` that message's reasoning blocks
    (for ``type`` ``signature``: that message's ``signatures``). A history produced by another
    model family carries reasoning the target cannot use, an origin-bound block made for another
    model or route would be refused, and reasoning off leaves history thinking out; the request
    is built without it, and this record says so on the built request and the result. A block
    replayed as plain text only (``foreign_origin: text``) is recorded too, its reason saying so.
    """

    message: int
    block: int
    type: str
    reason: str

    @property
    def where(self) -> str:
        """The record's place in the request: ``messages[i].reasoning.blocks[j]`` (or ``.signatures[j]``)."""
        field = "signatures" if self.type == "signature" else "blocks"
        return f"messages[{self.message}].reasoning.{field}[{self.block}]"
