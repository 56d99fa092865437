"""Policy parameters checked against each policy's declared ``Params`` model, located.

Per block (lint, and every file compile loads): a slot's ``{name, params}`` is complete in
the block that names it, so it is validated whole and the policy constructed; the params
policy's parameters also come from ``params:`` blocks of other layers, so there each key is
checked on its own. Per model (compile): the merged parameters of every slot are validated
and every policy constructed, so no plan is written that the executor would refuse.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from capplan.core.diagnostics import Diagnostic, did_you_mean
from capplan.core.reference_mode import reference_mode
from capplan.compiler.inputs.preset_file import SLOT_KEYS, ParamsBlock, PresetBody
from capplan.core.yaml_source import Loc, SourceFile
from capplan.compiler.provenance_lines import Located
from capplan.executor.policy_params import check_params, params_model
from capplan.executor.registry import RegistryError, policy_class, policy_targets

_MERGED_SLOT = "params_policy"  # its parameters merge with the `params:` block of every layer


def check_block_policies(source: SourceFile, loc: Loc, block: PresetBody) -> list[Diagnostic]:
    """The parameters of every policy a block names, and its `params:` keys."""
    out: list[Diagnostic] = []
    targets = policy_targets()
    for slot in SLOT_KEYS:
        ref = getattr(block, slot)
        if ref is None or ref.name not in targets[slot]:
            continue  # an unknown name is reported by the name check
        cls = policy_class(slot, ref.name)
        where = (*loc, slot, "params")
        partial = set(ref.params) if slot == _MERGED_SLOT else None
        problems = _located(source, where, cls, dict(ref.params), partial, f"{slot} {ref.name!r}")
        if not problems and partial is None:
            # B023: _construct calls the lambda before it returns, so `where` is this iteration's
            problems = _construct(cls, dict(ref.params), lambda code, msg: source.diag(where, code, msg))  # noqa: B023
        out += problems
    if block.params is not None:
        out += _params_block(source, (*loc, "params"), block.params, block)
    return out


def _params_block(source: SourceFile, loc: Loc, params: ParamsBlock, block: PresetBody) -> list[Diagnostic]:
    """Each key's value against the params policy that declares the key."""
    values = {k: getattr(params, k) for k in params.model_fields_set if k != "param_value_rules"}
    values.update({k: v for k, v in (params.model_extra or {}).items()})
    named = block.params_policy.name if block.params_policy is not None else None
    out: list[Diagnostic] = []
    for key, value in values.items():
        if value is None:
            continue
        owner = _declaring_policy(key, named)
        if owner is not None:
            out += _located(source, loc, owner, {key: value}, {key}, "params")
    return out


def _declaring_policy(key: str, named: str | None) -> type[Any] | None:
    names = [named] if named in policy_targets()[_MERGED_SLOT] else sorted(policy_targets()[_MERGED_SLOT])
    for name in names:
        cls = policy_class(_MERGED_SLOT, str(name))
        if key in params_model(cls).model_fields:
            return cls
    return None  # unknown keys are reported by the params-key check


def _located(source: SourceFile, loc: Loc, cls: type[Any], params: dict[str, Any], only: set[str] | None,
             what: str) -> list[Diagnostic]:
    out = []
    valid = list(params_model(cls).model_fields)
    for problem in check_params(cls, params, only=only):
        if problem.unknown:
            key = str(problem.loc[-1])
            out.append(source.diag((*loc, *problem.loc), "unknown-param", f"{what} has no parameter {key!r}",
                                   did_you_mean(key, valid) or "this policy takes no parameters"))
        else:
            out.append(source.diag((*loc, *problem.loc), "bad-param", problem.message))
    return out


def _construct(cls: type[Any], params: dict[str, Any], diag: Any) -> list[Diagnostic]:
    """The policy's own constructor checks (cross-parameter rules the model does not state)."""
    try:
        cls(**params)
    except (TypeError, ValueError) as exc:
        return [diag("bad-param", f"{cls.__qualname__} refuses these parameters: {exc}")]
    return []


class CleanPolicies:
    """The (slot, policy, parameters) one compile has checked and found clean.

    Most models of a compile merge the same policies with the same parameters; validating and
    constructing each again was about a tenth of compiling the catalogue plus 5 000 synthetic models
    (``benchmarks/compiler_speed.py``, memory row). The parameters are keyed by their ``repr``: equal
    text means equal YAML values, and an equal value spelled in another order is only checked
    again. Lives as long as one compile; the reference mode checks every model.
    """

    def __init__(self) -> None:
        self._clean: set[tuple[str, str, str]] = set()

    def key(self, slot: str, name: str, params: dict[str, Any]) -> tuple[str, str, str] | None:
        """The memo key of one slot, or None in the reference mode (check it every time)."""
        return None if reference_mode() else (slot, name, repr(params))

    def __contains__(self, key: object) -> bool:
        return key in self._clean

    def add(self, key: tuple[str, str, str]) -> None:
        self._clean.add(key)


def check_plan_policies(policies: dict[str, dict[str, Any]], provenance: Mapping[str, Located],
                        model_file: str, model_key: str, clean: CleanPolicies | None = None) -> list[Diagnostic]:
    """Every merged slot of one model: validated whole, then constructed, as the executor will.

    ``clean``: the slots found clean for earlier models of the compile, which are not checked again."""
    out: list[Diagnostic] = []
    for slot, ref in policies.items():
        memo_key = clean.key(slot, ref["name"], ref["params"]) if clean is not None else None
        if clean is not None and memo_key is not None and memo_key in clean:
            continue
        try:
            cls = policy_class(slot, ref["name"])
        except RegistryError:
            continue  # unknown names are reported where they are written
        params = dict(ref["params"])

        def diag(code: str, message: str, key: str | None = None, slot: str = slot,
                 params: dict[str, Any] = params) -> Diagnostic:
            if key is None:  # a refusal of the whole set: locate it at a parameter it names
                named = sorted((message.index(k), k) for k in params if k in message)
                key = named[0][1] if named else next(iter(params), None)
            path = f"policies.{slot}.params" + (f".{key}" if key else "")
            where = _provenance(provenance, path)
            return Diagnostic(where.file or model_file, where.line or 1, 1, code,
                              f"model {model_key!r}: {message}", path)

        problems = [diag("unknown-param" if p.unknown else "bad-param", p.message, ".".join(map(str, p.loc)))
                    for p in check_params(cls, params)]
        problems = problems or _construct(cls, params, diag)
        if not problems and clean is not None and memo_key is not None:
            clean.add(memo_key)
        out += problems
    return out


def _provenance(provenance: Mapping[str, Located], path: str) -> Located:
    """The layer that set ``path``, or its nearest ancestor that has one."""
    while path:
        if path in provenance:
            return provenance[path]
        path = path.rpartition(".")[0]
    return Located("default", None, None, None)
