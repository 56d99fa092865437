"""Checks on parsed preset / overlay / providers files that pydantic alone cannot express.

Each check returns diagnostics instead of raising, so one pass reports every problem in a file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from capplan.compiler.inputs.preset_file import SLOT_KEYS, ParamsBlock, PresetBody, PresetEntry
from capplan.compiler.policy_checks import check_block_policies
from capplan.compiler.value_checks import check_endpoints
from capplan.core.diagnostics import Diagnostic, did_you_mean
from capplan.core.reference_mode import speed_memo
from capplan.core.yaml_source import Loc, SourceFile
from capplan.executor.registry import policy_class, policy_targets
from capplan.executor.value_rules import PARAM_CHOICES, RULABLE_PARAMS, rule_value_problem, value_key

Block = tuple[Loc, PresetBody]


def blocks_of(default: PresetBody | None, presets: dict[str, PresetEntry],
              providers: dict[str, PresetBody]) -> Iterator[Block]:
    """Every preset-shaped block of a file, with its location."""
    if default is not None:
        yield ("default",), default
    for name, entry in presets.items():
        yield ("presets", name), entry
    for name, body in providers.items():
        yield ("providers", name), body


def check_blocks(source: SourceFile, blocks: Iterable[Block]) -> list[Diagnostic]:
    """Policy names, params keys and value rules of every block."""
    out: list[Diagnostic] = []
    for loc, block in blocks:
        out += check_policy_names(source, loc, block)
        if block.params is not None:
            out += check_params(source, (*loc, "params"), block.params)
        out += check_block_policies(source, loc, block)
        out += check_loop_knobs(source, loc, block)
    return out


def check_policy_names(source: SourceFile, loc: Loc, block: PresetBody) -> list[Diagnostic]:
    """Every policy a block names must be registered (the class-name gate, per block)."""
    out = []
    targets = policy_targets()
    for slot in SLOT_KEYS:
        ref = getattr(block, slot)
        if ref is not None and ref.name not in targets[slot]:
            out.append(source.diag((*loc, slot), "unknown-policy",
                                   f"no {slot} policy named {ref.name!r}",
                                   did_you_mean(ref.name, targets[slot])))
    responses = block.responses_api
    if responses is not None and responses.reasoning_codec.name not in targets["reasoning_codec"]:
        # the codec a Responses route swaps in is a policy name like any other
        out.append(source.diag((*loc, "responses_api", "reasoning_codec"), "unknown-policy",
                               f"no reasoning_codec policy named {responses.reasoning_codec.name!r}",
                               did_you_mean(responses.reasoning_codec.name, targets["reasoning_codec"])))
    return out


@speed_memo(maxsize=1)  # a union over the registry, which is fixed per process
def params_known_keys() -> frozenset[str]:
    """Union of ``KNOWN_KEYS`` over every registered params policy."""
    keys: set[str] = set()
    for name in policy_targets()["params_policy"]:
        keys |= set(policy_class("params_policy", name).KNOWN_KEYS)
    return frozenset(keys)


def check_params(source: SourceFile, loc: Loc, params: ParamsBlock) -> list[Diagnostic]:
    """Unknown params keys and every value-rule problem."""
    out: list[Diagnostic] = []
    legal = params_known_keys() | {"param_value_rules"}
    for key in params.model_extra or {}:
        if key == "unsupported_effort_levels":
            out.append(source.diag((*loc, key), "unsupported-effort-levels",
                                   "`unsupported_effort_levels` is not a params: key; legal keys: " + ", ".join(sorted(legal)),
                                   "declare the refused levels as param_value_rules: reasoning_effort: <level>: "
                                   "{action: reject, evidence: …}"))
        elif key not in legal:
            out.append(source.diag((*loc, key), "unknown-param", f"unknown params key {key!r}",
                                   did_you_mean(key, legal)))
    rules = params.param_value_rules or {}
    for param, by_value in rules.items():
        ploc = (*loc, "param_value_rules", param)
        if param not in RULABLE_PARAMS:
            out.append(source.diag(ploc, "unrulable-param",
                                   f"{param!r} cannot carry value rules: nothing would consult them",
                                   did_you_mean(param, RULABLE_PARAMS)))
            continue
        keys = {}
        for value in by_value:
            problem = _rule_value(source, (*ploc, value), param, value)
            if problem is None:
                keys[value] = value_key(param, value)
            else:
                out.append(problem)
        ruled = set(keys.values())
        for value, rule in by_value.items():
            if rule.action == "override" and value in keys:
                problem = _rule_value(source, (*ploc, value, "with"), param, rule.with_)
                if problem is not None:
                    out.append(problem)
                    continue
                target = value_key(param, rule.with_)
                if target in ruled:
                    out.append(source.diag(
                        (*ploc, value, "with"), "override-into-ruled",
                        f"override of {param}={keys[value]!r} sends {target!r}, which this block also rules",
                        "substitute a value the block does not call unusable, or use `action: reject`"))
    return out


def _rule_value(source: SourceFile, loc: Loc, param: str, value: object) -> Diagnostic | None:
    """A rule keyed by (or sending) a value the parameter can never take is a mistake, located."""
    try:
        value_key(param, value)
    except ValueError as exc:
        return source.diag(loc, "wrong-type", str(exc))
    problem = rule_value_problem(param, value)
    if problem is None:
        return None
    hint = did_you_mean(str(value), PARAM_CHOICES[param]) if param in PARAM_CHOICES else None
    return source.diag(loc, "bad-rule-value", problem, hint)


def check_loop_knobs(source: SourceFile, loc: Loc, block: PresetBody) -> list[Diagnostic]:
    """Knobs that contradict each other within one block (the merged ones are checked at compile)."""
    window, watermark = block.max_context_tokens, block.context_watermark
    if window is not None and watermark is not None and watermark >= window:
        return [source.diag((*loc, "context_watermark"), "watermark-above-window",
                            f"context_watermark {watermark} is not below max_context_tokens {window}: "
                            "every turn would summarize", "the watermark is the free tokens left; make it smaller")]
    return []


def check_bindings(source: SourceFile, at: Loc = ()) -> list[Diagnostic]:
    """Every rate-limit pattern must compile (they are compiled once per client), every endpoint is an http(s) URL.

    ``at`` is where the bindings mapping sits: the top of providers.yaml, ``bindings`` in an overlay.
    """
    out = []
    node = source.data
    for part in at:
        node = node.get(part) if isinstance(node, dict) else None
    out += check_endpoints(source, at, node)
    for key, entry in (node or {}).items() if isinstance(node, dict) else ():
        patterns = entry.get("rate_limit_patterns") if isinstance(entry, dict) else None
        for i, pattern in enumerate(patterns or []):
            try:
                re.compile(pattern)
            except (re.error, TypeError) as exc:
                out.append(source.diag((*at, key, "rate_limit_patterns", i), "bad-regex",
                                       f"pattern does not compile: {exc}"))
    return out
