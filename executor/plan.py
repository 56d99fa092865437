"""The capability plan: the contract between the compiler and the executor.

A plan is everything about one model that does not depend on the conversation, resolved once.
It is written as canonical JSON; ``fingerprint`` is the sha256 of the canonical body without
the fingerprint itself, so any edit to a plan file is detected on load.
"""

# no `from __future__ import annotations`: pydantic then reads these annotations as objects
# instead of evaluating strings, a measurable share of every command's start-up

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from executor.binding import CREDENTIAL_VALUE_MESSAGE as CREDENTIAL_VALUE_MESSAGE
from executor.binding import ProviderBinding as ProviderBinding
from executor.binding import SlugRewrite as SlugRewrite
from executor.binding import _Frozen
from executor.binding import env_var_name as env_var_name
from executor.canonical import canonical_bytes, sha256_hex
from executor.plan_integrity import canonical_and_sealed, with_fingerprint
from executor.reasoning import ReasoningConfig
from executor.value_rules import ValueRule

#: Bumped whenever the plan's shape or meaning changes; the executor refuses other versions.
#: 2: input digests and models_fingerprint moved to the run's manifest.json; files named by
#: stable name (relative to the project root, or a label), never by absolute path.
PLAN_VERSION = 2


class ModelIdentity(_Frozen):
    """Who the plan is for and what goes on the wire."""

    key: str = Field(description="The model's key in the run config or catalogue; the plan's file stem.")
    provider: str = Field(description="ModelConfig.provider as configured (e.g. openrouter, anthropic, nova).")
    name: str = Field(description="ModelConfig.name as configured (e.g. anthropic/claude-opus-4.7).")
    model_id: str = Field(
        description="The formatted model string: '<provider>/<name>', or the bare name for bare-name bindings. "
        "Keys pricing and litellm_models."
    )
    wire_model: str = Field(description="The model string handed to litellm after the binding's slug rewrite.")


class PolicyRef(_Frozen):
    """A policy by registry name, with the constructor parameters the layers gave it."""

    name: str = Field(description="Registry name within the slot.")
    params: dict[str, Any] = Field(default_factory=dict, description="Constructor keyword arguments.")


class BindingRef(_Frozen):
    """The binding a plan uses, and which providers.yaml key supplied it."""

    key: str | None = Field(description="Binding key (providers.yaml or an overlay's bindings:), or null for the "
                            "inert default binding.")
    binding: ProviderBinding


#: What tolokaforge 0.29.0 sends as OpenRouter attribution; kept as the default so usage reports
#: stay comparable across the two engines until an operator names their own app.
DEFAULT_OPENROUTER_REFERER = "https://github.com/Toloka-F/tolokaforge"
DEFAULT_OPENROUTER_TITLE = "Tolokaforge Evaluation"

DataCollection = Literal["allow", "deny"]


class OpenRouterRouting(_Frozen):
    """Everything capplan tells OpenRouter about a call, after the field-by-field merge."""

    provider_order: tuple[str, ...] = Field((), description="Upstream pin; empty means no pin lands.")
    allow_fallbacks: bool = Field(True, description="Whether OpenRouter may fall back to other upstreams.")
    referer: str = Field(
        DEFAULT_OPENROUTER_REFERER, min_length=1, description="HTTP-Referer attribution header (the app's URL)."
    )
    title: str = Field(DEFAULT_OPENROUTER_TITLE, min_length=1, description="X-Title attribution header (the app's name).")
    data_collection: DataCollection = Field(
        "deny",
        description="deny: only upstreams that do not collect or train on prompts (sent as "
        "provider.data_collection and the X-Data-Collection-Opt-Out header); allow: OpenRouter's default.",
    )


#: tolokaforge's per-attempt timeout when no layer sets one
DEFAULT_API_CALL_TIMEOUT_S = 120.0


class LoopKnobs(_Frozen):
    """Model-level knobs for the trial loop."""

    empty_retry_count: int = Field(0, ge=0, description="Resamples of a provider-side empty completion.")
    output_length_retry_count: int = Field(0, ge=0, description="Resamples of a content-carrying max-tokens truncation.")
    parser_error_retry_count: int = Field(0, ge=0, description="Resamples of unparseable tool-call arguments.")
    max_context_tokens: int | None = Field(None, gt=0, description="Context window used by the summarize seam.")
    context_watermark: int | None = Field(None, gt=0, description="Free tokens that trigger summarize before a turn.")
    tool_output_max_chars: int | None = Field(None, gt=0, description="Per-model cap on tool output in the prompt.")
    default_max_turns: int | None = Field(None, gt=0, description="Turn budget when the task declares none.")
    api_call_timeout_s: float = Field(
        DEFAULT_API_CALL_TIMEOUT_S, gt=0, description="Seconds litellm waits on one attempt (its `timeout`); sent on every attempt."
    )


class LitellmModelEntry(_Frozen):
    """An operator declaration for a model litellm's own map lacks."""

    key: str = Field(description="The litellm model id the entry is declared for.")
    supports_function_calling: bool = Field(False, description="Admit tools and tool_choice.")
    supports_reasoning: bool = Field(False, description="Admit reasoning_effort.")
    evidence: str = Field(description="Dated observation that justifies the declaration.")


class PricingEntry(_Frozen):
    """USD per million tokens for the model's pricing key."""

    key: str = Field(description="pricing.json key (the model id with one leading 'openrouter/' stripped).")
    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None


class RequestDefaults(_Frozen):
    """Per-run settings from the run config, applied when a call does not pass its own."""

    temperature: float | None = Field(None, description="Default sampling temperature.")
    seed: int | None = Field(None, description="Default seed.")
    top_p: float | None = Field(None, description="Default nucleus sampling mass.")
    max_tokens: int | None = Field(None, gt=0, description="Default output token cap.")
    parallel_tool_calls: bool | None = Field(
        None, description="Default parallel_tool_calls, sent only beside tools; null leaves the provider's default."
    )
    reasoning: ReasoningConfig = Field(default_factory=ReasoningConfig, description="Default reasoning config.")


class Provenance(_Frozen):
    """Which layer set a field, and where."""

    layer: str = Field(description="default | preset:<name> | providers:<provider> | overlay:<file> | model:<key> | binding | pricing | litellm_models")
    file: str | None = Field(None, description="Stable name of the file that set it (relative to the project root, or bundled:<file>).")
    key: str | None = Field(
        None, description="Key path in that file (e.g. presets.kimi.context_watermark): a location that does not "
                          "move when unrelated lines do; tools turn it into a line of the current file for display."
    )


class Plan(_Frozen):
    """A frozen, fingerprinted capability plan for one model."""

    plan_version: int = Field(description="Shape version; the executor refuses any other.")
    model: ModelIdentity
    effective_preset: str = Field(description="The preset that matched, or 'default'.")
    policies: dict[str, PolicyRef] = Field(description="One policy per slot, by registry name.")
    param_value_rules: dict[str, dict[str, ValueRule]] = Field(
        description="Merged rules: parameter -> canonical value -> rule."
    )
    allowed_openai_params: tuple[str, ...] = Field(description="Passed to litellm per call; empty when undeclared.")
    litellm_model: LitellmModelEntry | None = Field(description="The litellm_models entry that applied, if any.")
    loop: LoopKnobs
    binding: BindingRef
    openrouter: OpenRouterRouting | None = Field(
        description="Routing, attribution and data-collection choice; null when the model is not on the OpenRouter binding."
    )
    pricing: PricingEntry | None = Field(description="Price entry; null when pricing.json has no key for the model.")
    request_defaults: RequestDefaults
    provenance: dict[str, Provenance] = Field(description="Dotted field path -> the layer that set it.")
    fingerprint: str = Field(description="sha256 of the canonical plan body without this field.")

    #: the canonical file bytes, kept when sealing made them anyway
    _canonical: bytes | None = PrivateAttr(default=None)

    def body(self) -> dict[str, Any]:
        """The JSON body without ``fingerprint`` (what the fingerprint covers)."""
        data = self.model_dump(mode="json", by_alias=True)
        data.pop("fingerprint")
        return data

    def to_bytes(self) -> bytes:
        """The plan's canonical file content."""
        if self._canonical is not None:
            return self._canonical
        return canonical_bytes(self.model_dump(mode="json", by_alias=True))

    def __eq__(self, other: object) -> bool:
        # the kept file bytes are a cache of what the fields say, not part of the plan
        if not isinstance(other, Plan):
            return NotImplemented
        return type(self) is type(other) and self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]  # mutable dict fields: plans were never hashable

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy (see pydantic); it serialises afresh, since ``update`` may change its bytes."""
        copied = super().model_copy(update=update, deep=deep)
        copied._canonical = None
        return copied

    @classmethod
    def seal(cls, body: dict[str, Any]) -> "Plan":
        """Build a plan from its body, computing the fingerprint over the body as it will be written."""
        unsealed = cls.model_validate({**body, "fingerprint": ""})
        body_bytes = canonical_bytes(unsealed.body())
        fingerprint = sha256_hex(body_bytes)
        sealed = unsealed.model_copy(update={"fingerprint": fingerprint})
        # the file is the body's bytes with the fingerprint line in place: no second serialisation
        sealed._canonical = with_fingerprint(body_bytes, fingerprint)
        return sealed

    @classmethod
    def load(cls, path: str | Path, *, check_registry: bool = True) -> "Plan":
        """Read a plan file, refusing a tampered, foreign-version or unresolvable one."""
        return load_plan(path, check_registry=check_registry)


class PlanLoadError(ValueError):
    """A plan file cannot be used; the message says why and how to recompile."""


class PlanTamperedError(PlanLoadError):
    """A plan's body no longer hashes to its fingerprint: it was edited after compilation."""

    def __init__(self, message: str, claimed: str, actual: str) -> None:
        super().__init__(message)
        self.claimed = claimed
        self.actual = actual


def verify_fingerprint(path: Path, data: dict[str, Any]) -> None:
    """Check a plan document's ``fingerprint`` against the sha256 of the rest of it."""
    body = {k: v for k, v in data.items() if k != "fingerprint"}
    claimed, actual = data.get("fingerprint"), sha256_hex(canonical_bytes(body))
    if claimed != actual:
        raise PlanTamperedError(
            f"{path}: fingerprint mismatch (file says {str(claimed)[:12]}…, body hashes to {actual[:12]}…): "
            f"the plan was edited after compilation; {RECOMPILE_HINT} instead of editing it",
            str(claimed), actual,
        )


class _VerifiedPlans:
    """Plans already verified, by the sha256 of their file bytes; bounded, thread-safe.

    Loading the same bytes again (a new client per trial, a worker per task) needs only their
    digest: the verdict on identical bytes cannot differ. The registry check runs on every load.
    """

    def __init__(self, size: int = 256) -> None:
        self._size = size
        self._plans: OrderedDict[bytes, Plan] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, raw: bytes) -> Plan | None:
        key = hashlib.sha256(raw).digest()
        with self._lock:
            plan = self._plans.get(key)
            if plan is not None:
                self._plans.move_to_end(key)
            return plan

    def put(self, raw: bytes, plan: Plan) -> None:
        with self._lock:
            self._plans[hashlib.sha256(raw).digest()] = plan
            while len(self._plans) > self._size:
                self._plans.popitem(last=False)


_VERIFIED = _VerifiedPlans()

RECOMPILE_HINT = "recompile it with `capplan compile` (see `capplan compile --help`)"


def load_plan(path: str | Path, *, check_registry: bool = True) -> Plan:
    """Load and verify a plan file: exactly canonical bytes, fingerprint, version, types, policy names."""
    from executor.input_limits import MAX_PLAN_BYTES, InputLimitError, read_limited

    p = path if isinstance(path, Path) else Path(path)  # Path(a_path) parses it all again
    try:
        raw = read_limited(p, MAX_PLAN_BYTES)
    except OSError as exc:
        raise PlanLoadError(f"{p}: cannot read plan: {exc.strerror or exc}") from None
    except InputLimitError as exc:
        raise PlanLoadError(f"{p}:{exc.line}:{exc.col}: error[PLAN]: not a plan file ({exc})") from None
    plan = _VERIFIED.get(raw)
    if plan is None:
        plan = _verified_plan(p, raw)
        _VERIFIED.put(raw, plan)
    if check_registry:
        _check_policy_names(p, plan)
    return plan


def _verified_plan(p: Path, raw: bytes) -> Plan:
    """The plan in ``raw``, refusing a tampered, non-canonical or foreign-version one."""
    from executor.strict_json import StrictJSONError, loads_strict

    try:
        data = loads_strict(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise PlanLoadError(f"{p}: not a plan file (not UTF-8: {exc.reason})") from None
    except StrictJSONError as exc:
        raise PlanLoadError(f"{p}:{exc.line}:{exc.col}: error[PLAN]: not a plan file ({exc})") from None
    if not isinstance(data, dict) or "plan_version" not in data or "fingerprint" not in data:
        raise PlanLoadError(f"{p}: not a plan file (no plan_version / fingerprint)")
    version = data["plan_version"]
    if type(version) is not int or version != PLAN_VERSION:  # `true` and `1.0` equal 1 in Python
        age = "an older" if type(version) is int and version < PLAN_VERSION else "another"
        raise PlanLoadError(
            f"{p}: plan_version {json.dumps(version)} is {age} plan format; this capplan reads plan_version "
            f"{PLAN_VERSION}: {RECOMPILE_HINT}"
        )
    if not canonical_and_sealed(raw, data):
        verify_fingerprint(p, data)
        if raw != canonical_bytes(data):
            # the fingerprint covers canonical bytes, so another spelling of the same body is not this plan
            raise PlanLoadError(f"{p}: not in canonical form (sorted keys, two-space indent, UTF-8, trailing newline); "
                                f"{RECOMPILE_HINT} instead of editing it")
    try:
        plan = Plan.model_validate_json(raw, strict=True)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise PlanLoadError(f"{p}: plan body does not match plan_version {PLAN_VERSION}: {problems}") from None
    return plan


#: the last (plan, registry) pair found consistent: reloading one plan file asks the same question
_NAMES_CHECKED: tuple[Plan, object] | None = None


def _check_policy_names(path: Path, plan: Plan) -> None:
    from executor.registry import SLOTS, policy_targets

    global _NAMES_CHECKED
    targets = policy_targets()
    checked = _NAMES_CHECKED
    if checked is not None and checked[0] is plan and checked[1] is targets:
        return  # the same plan object against the same registry mapping: the same verdict
    if all(slot in SLOTS and ref.name in targets.get(slot, {}) for slot, ref in plan.policies.items()):
        _NAMES_CHECKED = (plan, targets)
        return
    missing = [
        f"{slot}={ref.name!r}"
        for slot, ref in sorted(plan.policies.items())
        if slot not in SLOTS or ref.name not in targets.get(slot, {})
    ]
    if missing:
        raise PlanLoadError(
            f"{path}: policies not in this installation's registry: {', '.join(missing)}; "
            f"install the package that provides them or {RECOMPILE_HINT}"
        )


