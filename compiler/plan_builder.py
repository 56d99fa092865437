"""Build one model's plan from the loaded inputs: match, merge, resolve, check, seal."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from capplan.core.diagnostics import Diagnostic
from capplan.compiler.inputs.pricing_file import normalize_model_name
from capplan.compiler.inputs.preset_file import KNOB_KEYS, SLOT_KEYS
from capplan.compiler.inputs.providers_file import binding_key
from capplan.compiler.inputs.run_config import ModelConfig
from capplan.compiler.layers import LayerMemo, Merged, layers_for, merge, shared_provenance
from capplan.compiler.loading import Inputs
from capplan.compiler.matching import Matcher
from capplan.compiler.policy_checks import CleanPolicies, check_plan_policies
from capplan.compiler.probe_evidence import apply_probe_evidence
from capplan.compiler.provenance_lines import LineIndex, Located, LocatedOnDemand
from capplan.compiler.replay_evidence import apply_replay_evidence, scope_to_route
from capplan.compiler.wire_route import wire_route
from capplan.core.yaml_source import SourceFile
from capplan.executor.plan import (
    PLAN_VERSION,
    BindingRef,
    LitellmModelEntry,
    LoopKnobs,
    ModelIdentity,
    OpenRouterRouting,
    Plan,
    PricingEntry,
    ProviderBinding,
    Provenance,
    RequestDefaults,
)
from capplan.executor.registry import DEFAULT_POLICY
from capplan.executor.value_rules import PARAM_CHOICES, ValueRule, value_key
from capplan.executor.wire_dialect import is_responses

if TYPE_CHECKING:  # the overlay's models are imported where an overlay is read
    from capplan.compiler.inputs.overlay_file import LitellmModelDecl


@dataclass(frozen=True)
class LitellmDecl:
    """A litellm_models entry and where it was declared."""

    key: str
    decl: LitellmModelDecl
    source: SourceFile


def build_plan(inputs: Inputs, matcher: Matcher, litellm: dict[str, LitellmDecl],
               key: str, cfg: ModelConfig, memo: LayerMemo | None = None,
               clean: CleanPolicies | None = None) -> tuple[Plan, list[Diagnostic]]:
    """Compile one model. Returns the plan and its diagnostics (errors mean: do not write it).

    ``memo`` and ``clean``: the layers the compile has walked and the policies it has found clean
    already, shared by its models."""
    run_src = inputs.run.source
    mloc = ("models", key)
    matched = matcher.first(cfg.name, cfg.provider)
    merged = merge(layers_for(inputs, cfg.provider, matched), memo)
    _apply_model_block(merged, cfg, run_src, key)

    binding_ref, binding_provenance = _binding(inputs, cfg.provider)
    binding = binding_ref.binding
    model_id = cfg.name if binding.format_model_name_bare else f"{cfg.provider}/{cfg.name}"
    identity = ModelIdentity(key=key, provider=cfg.provider, name=cfg.name, model_id=model_id,
                             wire_model=_rewrite(model_id, binding))

    values = merged.values
    params = dict(values.get("params", {}))
    rules_raw = params.pop("param_value_rules", {})
    rules: dict[str, dict[str, ValueRule]] = {p: dict(v) for p, v in sorted(rules_raw.items())}
    policies = {}
    for slot in SLOT_KEYS:
        ref = values.get(slot)
        name = ref.name if ref is not None else DEFAULT_POLICY[slot]
        slot_params = dict(ref.params) if ref is not None else {}
        if slot == "params_policy":
            slot_params = {**params, **slot_params}
        policies[slot] = {"name": name, "params": slot_params}
    provenance = {_plan_path(p): v for p, v in merged.provenance.items()}
    wire, wire_diags = wire_route(identity, binding, cfg.transport, run_src, key, values.get("responses_api"))
    # the block is not a plan field: what it decides is credited to the fields it sets
    responses_where = provenance.pop("responses_api", None)
    if is_responses(wire.protocol):
        _responses_policies(values["responses_api"], policies, provenance, responses_where)
    # identity comes from the catalogue / run config entry, the preset choice from matching
    provenance["model"] = Provenance(layer=f"model:{key}", file=run_src.stable_name, key=run_src.key_path(mloc))
    if matched is not None:
        provenance["effective_preset"] = shared_provenance(
            f"preset:{matched.name}", matched.source.stable_name, matched.source.key_path(("presets", matched.name)))

    decl = litellm.get(identity.wire_model) or litellm.get(identity.model_id)
    allowed: list[str] = []
    entry = None
    if decl is not None:
        entry = LitellmModelEntry(key=decl.key, **decl.decl.model_dump())
        allowed = sorted(({"tools", "tool_choice"} if decl.decl.supports_function_calling else set())
                         | ({"reasoning_effort"} if decl.decl.supports_reasoning else set()))
        provenance["allowed_openai_params"] = shared_provenance(
            "litellm_models", decl.source.stable_name, decl.source.key_path(("litellm_models", decl.key)))

    routing = _openrouter(values.get("openrouter_defaults"), cfg, binding_ref.key)
    if routing is not None and cfg.openrouter is not None:
        user_set = cfg.openrouter.model_fields_set
        fields = ["allow_fallbacks"] + [f for f in ("provider_order", "referer", "title", "data_collection")
                                        if f in user_set and getattr(cfg.openrouter, f)]
        for fld in fields:
            provenance[f"openrouter.{fld}"] = Provenance(layer=f"model:{key}", file=run_src.stable_name,
                                                         key=run_src.key_path((*mloc, "openrouter", fld)))
    if routing is None:
        provenance = {p: v for p, v in provenance.items() if not p.startswith("openrouter")}
    pricing = _pricing(inputs, model_id)
    if pricing is not None:
        provenance["pricing"] = shared_provenance("pricing", inputs.pricing.source.stable_name, None)
    provenance.update(binding_provenance)

    defaults = RequestDefaults(temperature=cfg.temperature, seed=cfg.seed, top_p=cfg.top_p,
                               max_tokens=cfg.max_tokens, parallel_tool_calls=cfg.parallel_tool_calls,
                               reasoning=cfg.reasoning)
    for fld in ("temperature", "seed", "top_p", "max_tokens", "parallel_tool_calls", "reasoning"):
        if fld in cfg.model_fields_set:
            provenance[f"request_defaults.{fld}"] = Provenance(
                layer=f"model:{key}", file=run_src.stable_name, key=run_src.key_path((*mloc, fld)))

    # measured answers of the plan's own route, and only its own (capplan.compiler.probe_evidence),
    # before the configured values are checked against the rules: a refusal measured today is an error
    apply_probe_evidence(inputs, identity, binding_ref.key, wire, rules, provenance)
    diags = _configured_value_checks(cfg, params, rules, decl, run_src, key)
    # the preset's replay evidence holds on its own route only; then measured verdicts narrow the
    # codec's replay scope (capplan.compiler.replay_evidence)
    diags += scope_to_route(identity, binding_ref.key, policies, provenance,
                            lambda: LineIndex(input_sources(inputs)).locate(provenance["policies.reasoning_codec"])
                            if "policies.reasoning_codec" in provenance else Located("default", None, None, None))
    diags += apply_replay_evidence(inputs, identity, binding_ref.key, policies, provenance)
    diags += wire_diags
    if cfg.transport is not None:
        provenance["wire.transport"] = Provenance(layer=f"model:{key}", file=run_src.stable_name,
                                                  key=run_src.key_path((*mloc, "transport")))
    located = _located_provenance(inputs, provenance)
    diags += check_plan_policies(policies, located, run_src.display, key, clean)
    diags += _loop_checks(values, located, run_src.display)
    body: dict[str, Any] = {
        "plan_version": PLAN_VERSION,
        # validated models go in as they are: the plan accepts an instance of a field's model without
        # validating it again, so nothing is dumped here only to be parsed back
        "model": identity,
        "effective_preset": matched.name if matched else "default",
        "policies": policies,
        "param_value_rules": {p: {v: r.model_dump(mode="json", by_alias=True, exclude_none=True)
                                  for v, r in sorted(by_v.items())} for p, by_v in rules.items()},
        "allowed_openai_params": allowed,
        "litellm_model": entry,
        "loop": LoopKnobs(**{k: values[k] for k in KNOB_KEYS if k in values}),
        "binding": binding_ref,
        "openrouter": routing,
        "pricing": pricing,
        "request_defaults": defaults,
        "provenance": dict(sorted(provenance.items())),
        "wire": wire,
    }
    return Plan.seal(body), diags


def _responses_policies(responses: Any, policies: dict[str, dict[str, Any]],
                        provenance: dict[str, Provenance], where: Provenance | None) -> None:
    """What a Responses route changes in the policies, each change credited to the ``responses_api`` block.

    The block's codec replaces the preset's (chat completions take no replayed reasoning; the
    Responses API takes encrypted reasoning items), and ``seed`` is not sent: the Responses API
    has no such parameter.
    """
    codec = responses.reasoning_codec
    policies["reasoning_codec"] = {"name": codec.name, "params": dict(codec.params)}
    policies["params_policy"]["params"]["supports_seed"] = False
    if where is not None:
        for path in [p for p in provenance if p == "policies.reasoning_codec" or p.startswith("policies.reasoning_codec.")]:
            del provenance[path]
        provenance["policies.reasoning_codec"] = where
        provenance["policies.params_policy.params.supports_seed"] = where
        # the endpoint and the stateless body fields come with the protocol
        for path in ("wire.protocol", "wire.path", "wire.body", "wire.evidence"):
            provenance[path] = where


def _apply_model_block(merged: Merged, cfg: ModelConfig, src: SourceFile, key: str) -> None:
    """Layer 5: the run config's own model block (legacy capability switches)."""
    if cfg.api_call_timeout_s is not None:
        merged.values["api_call_timeout_s"] = cfg.api_call_timeout_s
        merged.provenance["api_call_timeout_s"] = Provenance(
            layer=f"model:{key}", file=src.stable_name, key=src.key_path(("models", key, "api_call_timeout_s")))
    caps = cfg.capabilities
    if caps is not None and caps.dict_map_prompt_hints:
        from capplan.compiler.inputs.common import PolicyValueModel

        merged.values["prompt_policy"] = PolicyValueModel(name="dict_map_hints")
        loc = ("models", key, "capabilities", "dict_map_prompt_hints")
        merged.provenance["prompt_policy"] = Provenance(layer=f"model:{key}", file=src.stable_name,
                                                        key=src.key_path(loc))


def _plan_path(merge_path: str) -> str:
    """Where a merged field lives in the plan."""
    head, _, rest = merge_path.partition(".")
    if head in SLOT_KEYS:
        return f"policies.{head}" + (f".{rest}" if rest else "")
    if head == "params":
        if rest.startswith("param_value_rules"):
            return rest
        return f"policies.params_policy.params.{rest}" if rest else "policies.params_policy.params"
    if head in KNOB_KEYS:
        return f"loop.{head}"
    if head == "openrouter_defaults":
        return "openrouter" + (f".{rest}" if rest else "")
    return merge_path


def _binding(inputs: Inputs, provider: str) -> tuple[BindingRef, dict[str, Provenance]]:
    """providers.yaml's binding, then each overlay's `bindings:` entry field by field, in order."""
    key = binding_key(provider)
    shipped = inputs.providers.model.root
    provenance: dict[str, Provenance] = {}
    found = key in shipped
    binding = shipped[key] if found else ProviderBinding()  # built only when needed: its first build costs
    if found:
        src = inputs.providers.source
        provenance["binding"] = shared_provenance("binding", src.stable_name, src.key_path((key,)))
    for ov in inputs.overlays:
        patch = ov.model.bindings.get(key)
        if patch is None:
            continue
        found = True
        layer = f"overlay:{ov.source.stable_name}"
        if not shipped.get(key) and "binding" not in provenance:
            provenance["binding"] = shared_provenance(layer, ov.source.stable_name, ov.source.key_path(("bindings", key)))
        changed = {f: getattr(patch, f) for f in sorted(patch.model_fields_set)}
        binding = binding.model_copy(update=changed)
        for fld in changed:
            provenance[f"binding.binding.{fld}"] = shared_provenance(
                layer, ov.source.stable_name, ov.source.key_path(("bindings", key, fld)))
    return BindingRef(key=key if found else None, binding=binding), provenance


def _rewrite(model_id: str, binding: ProviderBinding) -> str:
    rule = binding.slug_rewrite
    if rule is None:
        return model_id
    out = model_id
    if rule.strip_prefix and out.startswith(rule.strip_prefix):
        out = out[len(rule.strip_prefix):]
    if rule.ensure_prefix and not out.startswith(rule.ensure_prefix):
        out = rule.ensure_prefix + out
    return out


def _openrouter(defaults: dict[str, Any] | None, cfg: ModelConfig, binding_key_: str | None
                ) -> OpenRouterRouting | None:
    """Field-by-field merge of the preset default and the user's `openrouter:` block."""
    if binding_key_ != "openrouter":
        return None
    defaults = defaults or {}
    user = cfg.openrouter
    order = list(user.provider_order) if user and user.provider_order else list(defaults.get("provider_order") or [])
    if user is not None:  # a bool has no "unset": the block's presence is what counts
        fallbacks = user.allow_fallbacks
    elif defaults.get("allow_fallbacks") is not None:
        fallbacks = bool(defaults["allow_fallbacks"])
    else:
        fallbacks = True
    # attribution and the data-collection choice: the user's value, else the layers', else the plan default
    named = {fld: getattr(user, fld) if user is not None and getattr(user, fld) is not None else defaults.get(fld)
             for fld in ("referer", "title", "data_collection")}
    return OpenRouterRouting(provider_order=tuple(order), allow_fallbacks=fallbacks,
                             **{fld: v for fld, v in named.items() if v is not None})


def _pricing(inputs: Inputs, model_id: str) -> PricingEntry | None:
    key = normalize_model_name(model_id)
    price = inputs.pricing.model.models.get(key)
    if price is None or price.input < 0 or price.output < 0:  # negative: a variable-price router
        return None
    return PricingEntry(key=key, **price.model_dump())


def input_sources(inputs: Inputs) -> list[SourceFile]:
    """Every file a compilation read, for turning provenance back into lines."""
    return [inputs.presets.source, inputs.providers.source, inputs.pricing.source, inputs.run.source,
            *(ov.source for ov in inputs.overlays)]


def _located_provenance(inputs: Inputs, provenance: dict[str, Provenance]) -> Mapping[str, Located]:
    """Provenance naming files as the user gave them, at their lines, for diagnostics (located when read)."""
    return LocatedOnDemand(provenance, lambda: LineIndex(input_sources(inputs)))


def _loop_checks(values: dict[str, Any], provenance: Mapping[str, Located], model_file: str) -> list[Diagnostic]:
    """Knobs whose merged values contradict each other, located at the layer that set the watermark."""
    window, watermark = values.get("max_context_tokens"), values.get("context_watermark")
    if window is None or watermark is None or watermark < window:
        return []
    where = provenance.get("loop.context_watermark") or Located("default", None, None, None)
    return [Diagnostic(where.file or model_file, where.line or 1, 1, "watermark-above-window",
                       f"context_watermark {watermark} ({where.layer}) is not below max_context_tokens {window}: "
                       "every turn would summarize", "loop.context_watermark",
                       "the watermark is the free tokens left; make it smaller than the window")]


def _configured_value_checks(cfg: ModelConfig, params: dict[str, Any], rules: dict[str, dict[str, ValueRule]],
                             decl: LitellmDecl | None, src: SourceFile, key: str) -> list[Diagnostic]:
    """Failures the compiler can see before any request exists."""
    out: list[Diagnostic] = []
    rloc = ("models", key, "reasoning")
    reasoning = cfg.reasoning
    # an extra_body route (OpenRouter) carries both modes itself, whatever the thinking flag says
    extra_body = bool(params.get("reasoning_via_extra_body"))
    thinking = bool(params.get("reasoning_via_thinking_kwarg")) and not extra_body
    if reasoning.mode == "adaptive" and thinking:
        out.append(src.diag(rloc, "reasoning-unexpressible",
                            "this model's preset sends reasoning as a thinking budget and has no adaptive path",
                            "use `reasoning: {mode: budget, budget_tokens: N}` (or mode: off)"))
    if reasoning.mode == "budget" and thinking and reasoning.budget_tokens is None \
            and params.get("reasoning_budget_default") is None:
        out.append(src.diag(rloc, "reasoning-unexpressible",
                            "mode budget without budget_tokens, and the preset has no reasoning_budget_default",
                            "set reasoning.budget_tokens"))
    effort = None
    budget = reasoning.budget_tokens if reasoning.budget_tokens is not None else params.get("reasoning_budget_default")
    if reasoning.mode == "adaptive" or (reasoning.mode == "budget" and not thinking
                                        and not (extra_body and budget is not None)):
        effort = reasoning.effort_hint
    sent = {"reasoning_effort": effort, "temperature": cfg.temperature, "top_p": cfg.top_p,
            "parallel_tool_calls": cfg.parallel_tool_calls}
    for param, value in sent.items():
        if value is None or param not in rules:
            continue
        rule = rules[param].get(value_key(param, value))
        if rule is not None and rule.action == "reject":
            field = "reasoning" if param == "reasoning_effort" else param
            refused = {v for v, r in rules[param].items() if r.action == "reject"}
            remaining = [v for v in PARAM_CHOICES.get(param, ()) if v not in refused]
            out.append(src.diag(("models", key, field), "rejected-value",
                                f"{param}={value!r} is refused for this model: {rule.evidence}",
                                "choose another value" + (f": {', '.join(remaining)}" if remaining else "")))
    if decl is not None and reasoning.mode != "off" and not decl.decl.supports_reasoning:
        line, col = decl.source.position(("litellm_models", decl.key))
        out.append(src.diag(rloc, "reasoning-not-declared",
                            f"reasoning is configured, but the litellm_models entry {decl.key!r} "
                            f"({decl.source.display}:{line}) does not declare supports_reasoning",
                            "add `supports_reasoning: true` with evidence to that entry, or set reasoning.mode: off"))
    return out
