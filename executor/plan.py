"""The capability plan: the contract between the compiler and the executor.

A plan is everything about one model that does not depend on the conversation, resolved once.
It is written as canonical JSON; ``fingerprint`` is the sha256 of the canonical body without
the fingerprint itself, so any edit to a plan file is detected on load.
"""

# no `from __future__ import annotations`: pydantic then reads these annotations as objects
# instead of evaluating strings, a measurable share of every command's start-up

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Self

from pydantic import Field, PrivateAttr, ValidationError, field_validator

from capplan.executor.binding import CREDENTIAL_VALUE_MESSAGE as CREDENTIAL_VALUE_MESSAGE
from capplan.executor.binding import ProviderBinding as ProviderBinding
from capplan.executor.binding import SlugRewrite as SlugRewrite
from capplan.executor.binding import _Frozen
from capplan.executor.binding import env_var_name as env_var_name
from capplan.core.canonical import canonical_bytes, sha256_hex
from capplan.executor.plan_cache import remember_verified, verified_plan
from capplan.executor.errors import PlanError
from capplan.executor.plan_integrity import canonical_and_sealed, with_fingerprint
from capplan.executor.reasoning import ReasoningConfig
from capplan.core.safe_names import name_problem
from capplan.executor.value_rules import ValueRule
from capplan.executor.wire_dialect import CHAT_PATH, TransportName, WireProtocol
from capplan.core.default_factories import empty_dict
from capplan.core.value_types import (
    MAX_TOKENS,
    CharCount,
    HeaderValue,
    Price,
    RetryCount,
    Seconds,
    Seed,
    Temperature,
    TokenCount,
    TopP,
    TurnCount,
    UpstreamName,
    http_url_problem,
    non_finite_path,
    regex_problem,
)


class FieldProblem(ValueError):
    """A validator's finding about a field inside the one it validates (``sub`` is its path there)."""

    def __init__(self, sub: tuple[str | int, ...], problem: str) -> None:
        self.sub, self.problem = sub, problem
        super().__init__(f"{'.'.join(map(str, sub))} {problem}")


#: Bumped whenever the plan's shape or meaning changes; the executor refuses other versions.
#: 2: input digests and models_fingerprint moved to the run's manifest.json; files named by
#: stable name (relative to the project root, or a label), never by absolute path.
PLAN_VERSION = 2


class ModelIdentity(_Frozen):
    """Who the plan is for and what goes on the wire."""

    key: str = Field(description="The model's key in the run config or catalogue; the plan's file stem. It names the "
                     "model's folder in a trial run, so it is a safe name: letters, digits and . _ - + = @ , starting "
                     "with a letter or digit, no '..', at most 128 characters.")
    provider: str = Field(description="ModelConfig.provider as configured (e.g. openrouter, anthropic, nova).")
    name: str = Field(description="ModelConfig.name as configured (e.g. anthropic/claude-opus-4.7).")
    model_id: str = Field(
        description="The formatted model string: '<provider>/<name>', or the bare name for bare-name bindings. "
        "Keys pricing and litellm_models."
    )
    wire_model: str = Field(description="The model string handed to litellm after the binding's slug rewrite.")

    @field_validator("key")
    @classmethod
    def _safe_key(cls, value: str) -> str:
        # the key becomes a folder under a trial run's --out: `../x`, `/x` or a NUL must never get there
        problem = name_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value


class PolicyRef(_Frozen):
    """A policy by registry name, with the constructor parameters the layers gave it."""

    name: str = Field(description="Registry name within the slot.")
    params: dict[str, Any] = Field(default_factory=empty_dict, description="Constructor keyword arguments.")

    @field_validator("params")
    @classmethod
    def _finite(cls, value: dict[str, Any]) -> dict[str, Any]:
        # the policy's own parameter model types them when it is built; NaN and infinity never make sense
        where = non_finite_path(value)
        if where is not None:
            raise FieldProblem(where, "is not a finite number")
        return value


class BindingRef(_Frozen):
    """The binding a plan uses, and which providers.yaml key supplied it."""

    key: str | None = Field(description="Binding key (providers.yaml or an overlay's bindings:), or null for the "
                            "inert default binding.")
    binding: ProviderBinding

    @field_validator("binding")
    @classmethod
    def _usable_transport(cls, value: ProviderBinding) -> ProviderBinding:
        # checked here, not on ProviderBinding: input files name bindings too, and the compiler
        # reports their endpoints and patterns with its own located diagnostics (same rules)
        if value.endpoint is not None:
            problem = http_url_problem(value.endpoint)
            if problem is not None:
                raise FieldProblem(("endpoint",), problem)
        for index, pattern in enumerate(value.rate_limit_patterns):
            problem = regex_problem(pattern)
            if problem is not None:
                raise FieldProblem(("rate_limit_patterns", index), problem)
        return value


#: What tolokaforge 0.29.0 sends as OpenRouter attribution; kept as the default so usage reports
#: stay comparable across the two engines until an operator names their own app.
DEFAULT_OPENROUTER_REFERER = "https://github.com/Toloka-F/tolokaforge"
DEFAULT_OPENROUTER_TITLE = "Tolokaforge Evaluation"

DataCollection = Literal["allow", "deny"]


class OpenRouterRouting(_Frozen):
    """Everything capplan tells OpenRouter about a call, after the field-by-field merge."""

    provider_order: tuple[UpstreamName, ...] = Field((), description="Upstream pin; empty means no pin lands.")
    allow_fallbacks: bool = Field(True, description="Whether OpenRouter may fall back to other upstreams.")
    referer: HeaderValue = Field(DEFAULT_OPENROUTER_REFERER, description="HTTP-Referer attribution header (the app's URL).")
    title: HeaderValue = Field(DEFAULT_OPENROUTER_TITLE, description="X-Title attribution header (the app's name).")
    data_collection: DataCollection = Field(
        "deny",
        description="deny: only upstreams that do not collect or train on prompts (sent as "
        "provider.data_collection and the X-Data-Collection-Opt-Out header); allow: OpenRouter's default.",
    )


#: tolokaforge's per-attempt timeout when no layer sets one
DEFAULT_API_CALL_TIMEOUT_S = 120.0


class LoopKnobs(_Frozen):
    """Model-level knobs for the trial loop."""

    # bounded like the compiler's inputs (capplan.core.value_types): a resealed plan asking for 10**12
    # turns or a one-year timeout is refused at load, not discovered mid-run
    empty_retry_count: RetryCount = Field(0, description="Resamples of a provider-side empty completion.")
    output_length_retry_count: RetryCount = Field(0, description="Resamples of a content-carrying max-tokens truncation.")
    parser_error_retry_count: RetryCount = Field(0, description="Resamples of unparseable tool-call arguments.")
    max_context_tokens: TokenCount | None = Field(None, description="Context window used by the summarize seam.")
    context_watermark: TokenCount | None = Field(None, description="Free tokens that trigger summarize before a turn.")
    tool_output_max_chars: CharCount | None = Field(None, description="Per-model cap on tool output in the prompt.")
    default_max_turns: TurnCount | None = Field(None, description="Turn budget when the task declares none.")
    api_call_timeout_s: Seconds = Field(
        DEFAULT_API_CALL_TIMEOUT_S, description="Seconds litellm waits on one attempt (its `timeout`); sent on every attempt."
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
    # a variable-price router (negative in pricing.json) gets no entry at all, so every price here is >= 0
    input: Price
    output: Price
    cache_read: Price | None = None
    cache_write: Price | None = None


class RequestDefaults(_Frozen):
    """Per-run settings from the run config, applied when a call does not pass its own."""

    temperature: Temperature | None = Field(None, description="Default sampling temperature.")
    seed: Seed | None = Field(None, description="Default seed (a signed 64-bit integer).")
    top_p: TopP | None = Field(None, description="Default nucleus sampling mass.")
    max_tokens: TokenCount | None = Field(None, description="Default output token cap.")
    parallel_tool_calls: bool | None = Field(
        None, description="Default parallel_tool_calls, sent only beside tools; null leaves the provider's default."
    )
    reasoning: ReasoningConfig = Field(default_factory=ReasoningConfig, description="Default reasoning config.")

    @field_validator("reasoning")
    @classmethod
    def _bounded_budget(cls, value: ReasoningConfig) -> ReasoningConfig:
        # ReasoningConfig is shared with requests and run configs; a plan bounds it like every token count
        if value.budget_tokens is not None and value.budget_tokens > MAX_TOKENS:
            raise ValueError(f"budget_tokens must be at most {MAX_TOKENS}")
        return value


class WireRoute(_Frozen):
    """Which wire the route speaks and, for ``openai-chat`` and the Responses wires, everything the direct
    transport's request needs.

    Decided at compile time (``capplan.executor.wire_dialect``): nothing here is worked out per call.
    Credentials are never in it, only the names of the variables they are read from.
    """

    protocol: WireProtocol = Field(description="openai-chat: an OpenAI-compatible chat endpoint (OpenAI, OpenRouter, "
                                   "xAI, Azure AI, custom endpoint bindings, gateways); openai-responses / "
                                   "xai-responses: OpenAI's or xAI's Responses API (input items, replayed encrypted "
                                   "reasoning); litellm: a native protocol.")
    transport: TransportName = Field(description="direct: capplan's own HTTP client sends the request; litellm: "
                                     "litellm.completion does (the run config's `transport:`).")
    provider: str = Field(description="The litellm provider of the route; its prefix is stripped off the model on the wire.")
    base_url: str | None = Field(None, description="The provider's default base URL when neither the call, the "
                                 "binding nor base_url_envs names one.")
    base_url_envs: tuple[str, ...] = Field((), description="Variables read for the base URL, in order, after the "
                                           "binding's own.")
    key_envs: tuple[str, ...] = Field((), description="Variables the key is read from when the binding names none.")
    path: str = Field(CHAT_PATH, description="Appended to the base URL.")
    headers: dict[str, HeaderValue] = Field(default_factory=empty_dict, description="Static request headers (no secret).")
    body: dict[str, Any] = Field(default_factory=empty_dict, description="Fields every request body carries.")
    renames: dict[str, str] = Field(default_factory=empty_dict, description="Body keys sent under another name "
                                    "(max_tokens -> max_completion_tokens on OpenAI reasoning models).")
    system_role: Literal["system", "user"] = Field("system", description="The role a system message is sent with.")
    evidence: str | None = Field(None, description="Why the route speaks this protocol, when a preset chose it "
                                 "(the responses_api block's dated evidence); null for the provider's default.")


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
    wire: WireRoute | None = Field(None, description="The route's wire and transport; null (plans built without it): "
                                   "every call goes through litellm.")
    fingerprint: str = Field(description="sha256 of the canonical plan body without this field.")

    @field_validator("param_value_rules")
    @classmethod
    def _finite_overrides(cls, value: dict[str, dict[str, ValueRule]]) -> dict[str, dict[str, ValueRule]]:
        # ValueRule is the compiler's input model too; only a plan can spell `with: 1e999`
        for param, rules in value.items():
            for key, rule in rules.items():
                if isinstance(rule.with_, float) and not math.isfinite(rule.with_):
                    raise FieldProblem((param, key, "with"), "is not a finite number")
        return value

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


class PlanLoadError(PlanError, ValueError):
    """A plan file cannot be used; the message says why and how to recompile.

    ``location`` is the plan file (with line and column where known); a plan whose body the
    model refuses carries one located ``problems`` entry per refused value. ``str()`` is the
    rendered text, place included, so a caller that only formats the exception still says where.
    """

    def __init__(self, message: str, *, location: str | None = None,
                 problems: Sequence[tuple[str, str]] = (), hint: str | None = None) -> None:
        super().__init__(message, location=location, hint=hint)
        #: ``(location, message)`` per refused value, in the plan's order
        self.problems = tuple(problems)

    def render(self) -> str:
        if not self.problems:
            return super().render()
        return "\n".join(f"{where}: error[{self.code}]: {message}" for where, message in self.problems)

    def __str__(self) -> str:
        return self.render()


class PlanTamperedError(PlanLoadError):
    """A plan's body no longer hashes to its fingerprint: it was edited after compilation."""

    def __init__(self, message: str, claimed: str, actual: str, *, location: str | None = None) -> None:
        super().__init__(message, location=location)
        self.claimed = claimed
        self.actual = actual


def verify_fingerprint(path: Path, data: dict[str, Any]) -> None:
    """Check a plan document's ``fingerprint`` against the sha256 of the rest of it."""
    body = {k: v for k, v in data.items() if k != "fingerprint"}
    try:
        actual = sha256_hex(canonical_bytes(body))
    except (ValueError, TypeError, RecursionError):
        # NaN, an out-of-range float or a structure canonical JSON cannot write: capplan never sealed it
        raise PlanLoadError(f"not a plan file (its body holds a value canonical JSON cannot write, such as a "
                            f"non-finite number); {RECOMPILE_HINT}", location=f"{path}:1:1") from None
    claimed = data.get("fingerprint")
    if claimed != actual:
        raise PlanTamperedError(
            f"fingerprint mismatch (file says {str(claimed)[:12]}…, body hashes to {actual[:12]}…): "
            f"the plan was edited after compilation; {RECOMPILE_HINT} instead of editing it",
            str(claimed), actual, location=str(path),
        )


RECOMPILE_HINT = "recompile it with `capplan compile` (see `capplan compile --help`)"


def load_plan(path: str | Path, *, check_registry: bool = True) -> Plan:
    """Load and verify a plan file: exactly canonical bytes, fingerprint, version, types, policy names."""
    from capplan.core.input_limits import MAX_PLAN_BYTES, InputLimitError, read_limited

    p = path if isinstance(path, Path) else Path(path)  # Path(a_path) parses it all again
    try:
        raw = read_limited(p, MAX_PLAN_BYTES)
    except OSError as exc:
        raise PlanLoadError(f"cannot read plan: {exc.strerror or exc}", location=str(p)) from None
    except InputLimitError as exc:
        raise PlanLoadError(f"not a plan file ({exc})", location=f"{p}:{exc.line}:{exc.col}") from None
    cached = verified_plan(raw)
    if isinstance(cached, Plan):
        plan = cached
    else:
        plan = _verified_plan(p, raw)
        remember_verified(raw, plan)
    if check_registry:
        _check_policy_names(p, plan)
    return plan


def _verified_plan(p: Path, raw: bytes) -> Plan:
    """The plan in ``raw``, refusing a tampered, non-canonical or foreign-version one."""
    from capplan.core.input_limits import InputLimitError
    from capplan.core.strict_json import StrictJSONError, loads_strict

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PlanLoadError(f"not a plan file (not UTF-8: {exc.reason})", location=str(p)) from None
    try:
        data = loads_strict(text)
    except (StrictJSONError, InputLimitError) as exc:  # nesting past MAX_NESTING is an InputLimitError
        raise PlanLoadError(f"not a plan file ({exc})", location=f"{p}:{exc.line}:{exc.col}") from None
    except (ValueError, RecursionError):
        # a limit of Python's own decoder the strict reader does not word (its message may quote the input)
        raise PlanLoadError("not a plan file (JSON this reader cannot hold)", location=f"{p}:1:1") from None
    if not isinstance(data, dict) or "plan_version" not in data or "fingerprint" not in data:
        raise PlanLoadError("not a plan file (no plan_version / fingerprint)", location=str(p))
    version = data["plan_version"]
    if type(version) is not int:  # `true` and `1.0` equal 1 in Python; `"2"` is a hand edit, not a format
        line, col = _position(text, ("plan_version",))
        raise PlanLoadError(
            f"plan_version must be a whole number, not {json_kind(version)}",  # the value is not echoed
            location=f"{p}:{line}:{col}",
            hint=f"plan files are written by capplan, never by hand: {RECOMPILE_HINT}")
    if version != PLAN_VERSION:
        age = "an older" if version < PLAN_VERSION else "another"
        raise PlanLoadError(
            f"plan_version {json.dumps(version)} is {age} plan format; this capplan reads plan_version "
            f"{PLAN_VERSION}: {RECOMPILE_HINT}", location=str(p),
        )
    if not canonical_and_sealed(raw, data):
        verify_fingerprint(p, data)
        if raw != canonical_bytes(data):
            # the fingerprint covers canonical bytes, so another spelling of the same body is not this plan
            raise PlanLoadError("not in canonical form (sorted keys, two-space indent, UTF-8, trailing newline); "
                                f"{RECOMPILE_HINT} instead of editing it", location=str(p))
    try:
        plan = Plan.model_validate_json(raw, strict=True)
    except ValidationError as exc:
        # a sealed body can still be hostile (a resealed plan): every value is refused where it stands
        problems = _refusal(p, text, data, exc)
        raise PlanLoadError("\n".join(m for _, m in problems), location=problems[0][0], problems=problems) from None
    # the file's own bytes, verified above: a plan compiled before a field with a default was added
    # (a binding limit) still travels as what its fingerprint covers, not as a re-dump with the default
    plan._canonical = raw
    return plan


#: problems listed one per line before the rest are counted
_MAX_PROBLEMS_SHOWN = 20


def _refusal(p: Path, text: str, data: dict[str, Any], exc: ValidationError) -> list[tuple[str, str]]:
    """``(location, message)`` per problem the plan model found, never quoting a value."""
    errors = exc.errors(include_url=False, include_input=False, include_context=True)
    lines: list[tuple[str, str]] = []
    for err in errors[:_MAX_PROBLEMS_SHOWN]:
        loc, problem = tuple(err["loc"]), str(err["msg"])
        cause = (err.get("ctx") or {}).get("error")
        if isinstance(cause, FieldProblem):
            loc, problem = (*loc, *cause.sub), cause.problem
        else:
            problem = problem.removeprefix("Value error, ")
        path = _data_path(data, loc)
        line, col = _position(text, path)
        lines.append((f"{p}:{line}:{col}", f"{_shown(path)}: {problem}"))
    if len(errors) > _MAX_PROBLEMS_SHOWN:
        lines.append((f"{p}:1:1", f"and {len(errors) - _MAX_PROBLEMS_SHOWN} more problem(s)"))
    where, last = lines[-1]
    lines[-1] = (where, f"{last}; plan body does not match plan_version {PLAN_VERSION}: {RECOMPILE_HINT} "
                        "instead of editing it")
    return lines


def _data_path(data: Any, loc: tuple[Any, ...]) -> tuple[str | int, ...]:
    """pydantic's ``loc`` as keys and indexes into ``data``, without its validator and union labels."""
    path: list[str | int] = []
    node = data
    for part in loc:
        if isinstance(node, dict) and isinstance(part, str) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        elif isinstance(part, str) and ("[" in part or part in _TYPE_LABELS):
            continue  # `function-after[...]`, `float`: how pydantic got there, not where
        else:
            node = None  # a key the body lacks (a missing field): named, nothing below it to find
        path.append(part)
    return tuple(path)


#: the union-member labels pydantic puts in ``loc`` (``with: bool | str | float | None``)
_TYPE_LABELS = frozenset({"bool", "str", "float", "int", "none", "list", "dict", "tuple"})


def json_kind(value: Any) -> str:
    """What a JSON value is, in JSON's words."""
    if isinstance(value, bool):
        return "true/false"
    return {str: "a string", float: "a fractional number", list: "a list", dict: "an object"}.get(type(value), "null")


def _shown(path: tuple[str | int, ...]) -> str:
    """``path`` as ``a.b[2].c``; a key that is long, unprintable or looks like a credential is not echoed."""
    from capplan.executor.binding import looks_like_key

    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        safe = len(part) <= 64 and part.isprintable() and not looks_like_key(part)
        out += ("." if out else "") + (part if safe else "<key>")
    return out or "(top level)"


def _position(text: str, path: tuple[str | int, ...]) -> tuple[int, int]:
    """Line and column (1-based) of the value at ``path`` in canonical plan ``text``; the deepest part found.

    Canonical JSON puts each key and each list item on its own line, indented two spaces per level.
    """
    lines = text.split("\n")
    at, col = 0, 1
    for depth, part in enumerate(path, start=1):
        indent = 2 * depth
        head = " " * indent + json.dumps(part, ensure_ascii=False) + ":" if isinstance(part, str) else ""
        items = -1
        for index in range(at + 1, len(lines)):
            line = lines[index]
            width = len(line) - len(line.lstrip(" "))
            if width < indent:
                return at + 1, col  # the container closed before the part: the deepest found
            if width != indent:
                continue
            if isinstance(part, str) and line.startswith(head):
                break
            if isinstance(part, int) and line[indent:indent + 1] not in ("}", "]"):
                items += 1
                if items == part:
                    break
        else:
            return at + 1, col
        at, col = index, indent + 1
    return at + 1, col


#: the last (plan, registry) pair found consistent: reloading one plan file asks the same question
_NAMES_CHECKED: tuple[Plan, object] | None = None


def _check_policy_names(path: Path, plan: Plan) -> None:
    from capplan.executor.registry import SLOTS, policy_targets

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
            f"policies not in this installation's registry: {', '.join(missing)}; "
            f"install the package that provides them or {RECOMPILE_HINT}", location=str(path),
        )


