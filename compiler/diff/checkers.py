"""The named checkers of ``capplan diff`` in one table, and ``--checks`` / ``--ignore`` selection.

A checker is a row: a name, what it compares, the plan fields it owns (minus those another
row owns), and how a change's layer is found. Every plan field except ``plan_version``
(reported per model), ``provenance`` (used to name the layer of a change) and ``fingerprint``
(follows from the rest) is owned by exactly one checker; a test keeps it so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from capplan.compiler.diff.errors import DiffInputError
from capplan.compiler.diff.model import Change
from capplan.compiler.diff.walk import Path, enclosing, leaf_changes, provenance_entry, source_of, subtree
from capplan.core.diagnostics import did_you_mean
from capplan.executor.plan import Provenance

#: (changed path, old plan body, new plan body) -> the layer behind the change, or None
SourceFn = Callable[[Path, Mapping[str, Any], Mapping[str, Any]], Provenance | None]


def field_source(path: Path, old: Mapping[str, Any], new: Mapping[str, Any]) -> Provenance | None:
    """The provenance entry of the changed field (or of its nearest recorded ancestor)."""
    return source_of(path, new, old)


def preset_source(path: Path, old: Mapping[str, Any], new: Mapping[str, Any]) -> Provenance | None:
    """The matched preset has no provenance key of its own; the preset's layer is its source."""
    if path != ("effective_preset",):
        return source_of(path, new, old)
    for body in (new, old):
        name = body.get("effective_preset")
        layer = "default" if name == "default" else f"preset:{name}"
        entries = [provenance_entry(v) for v in (body.get("provenance") or {}).values()]
        hits = [p for p in entries if p.layer == layer]
        if hits:
            return enclosing(hits)
    return None


def allowed_params_source(path: Path, old: Mapping[str, Any], new: Mapping[str, Any]) -> Provenance | None:
    """The plan records the litellm_models entry's location once, under allowed_openai_params."""
    if path[:1] == ("litellm_model",):
        return source_of(("allowed_openai_params",), new, old)
    return source_of(path, new, old)


def no_source(path: Path, old: Mapping[str, Any], new: Mapping[str, Any]) -> Provenance | None:
    """Input digests are facts about files, not layer outputs: they have no provenance."""
    return None


@dataclass(frozen=True)
class Checker:
    """Compares the plan fields under ``owns`` (minus ``excludes``, which another checker owns)."""

    name: str
    description: str
    owns: tuple[Path, ...]
    excludes: tuple[Path, ...] = ()
    source: SourceFn = field_source

    def check(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
        """Every change in this checker's fields, in field order."""
        out: list[Change] = []
        for prefix in self.owns:
            for path, before, after in leaf_changes(subtree(old, prefix), subtree(new, prefix), prefix):
                if not any(path[: len(ex)] == ex for ex in self.excludes):
                    out.append(Change(self.name, ".".join(path), before, after, self.source(path, old, new)))
        return out


#: The name of the checker whose changes are facts about the run, reported once (see engine).
INPUTS = "inputs"

#: the reasoning codec's replay scope and the evidence behind it (capplan.compiler.replay_evidence)
_REPLAY: tuple[Path, ...] = (("policies", "reasoning_codec", "params", "replay"),
                             ("policies", "reasoning_codec", "params", "evidence"))

#: name -> checker, in report order
CHECKERS: dict[str, Checker] = {c.name: c for c in (
    Checker("preset", "effective_preset (which preset matched) and the model identity",
            owns=(("effective_preset",), ("model",)), source=preset_source),
    Checker("policies", "policy name per slot, and constructor params of every slot except params_policy",
            owns=(("policies",),), excludes=(("policies", "params_policy", "params"), *_REPLAY)),
    # a new replay verdict changes which turns carry reasoning: a behaviour change of its own
    Checker("replay", "reasoning replay: which assistant turns replay reasoning, and the measured verdict "
                      "(overlay reasoning_replay evidence) that decided it",
            owns=_REPLAY),
    Checker("params", "params_policy flags: seed support, reasoning routing, sampling drops, budgets",
            owns=(("policies", "params_policy", "params"),)),
    # evidence is part of the claim: the same action on a new date, route or provider text rests on
    # another measurement, so it is a change like any other (never filtered as cosmetic)
    Checker("value_rules", "param_value_rules: per parameter and value, the action and its evidence (new "
                           "evidence behind the same action is a change)",
            owns=(("param_value_rules",),)),
    Checker("allowed_params", "allowed_openai_params and the litellm_models entry behind them",
            owns=(("allowed_openai_params",), ("litellm_model",)), source=allowed_params_source),
    Checker("binding", "provider binding: endpoint, credential env var names, routing hints, slug rewrite",
            owns=(("binding",),)),
    Checker("routing", "OpenRouter: provider_order pin, allow_fallbacks, attribution headers, data_collection",
            owns=(("openrouter",),)),
    Checker("loop", "loop knobs: resample counts, context window and watermark, tool output cap, turns, "
                    "per-attempt timeout",
            owns=(("loop",),)),
    Checker("pricing", "price entry: key, input / output / cache prices", owns=(("pricing",),)),
    # which HTTP client sends the request, and the URL, headers and body fields it sends them with
    Checker("transport", "wire route: protocol (openai-chat or litellm), transport (direct or litellm), base URL "
                         "and its variables, key variable names, path, static headers, body fields, renames",
            owns=(("wire",),)),
    Checker("defaults", "request defaults from the run config: temperature, seed, top_p, max_tokens, "
                        "parallel_tool_calls, reasoning",
            owns=(("request_defaults",),)),
    # a change here alone means the plan behaves exactly as before; `--ignore inputs` hides it
    Checker(INPUTS, "input file paths and sha256 digests, and models_fingerprint (from the run's manifest.json)",
            owns=(("inputs",), ("models_fingerprint",)), source=no_source),
)}

#: plan fields no checker owns, and why
UNCHECKED_FIELDS: dict[str, str] = {
    "plan_version": "reported per model as a version change",
    "provenance": "names the layer of each change; where a value came from is not itself a change",
    "fingerprint": "a hash of everything else",
}


def select_checkers(checks: Iterable[str] | None, ignore: Iterable[str] = ()) -> list[Checker]:
    """``--checks`` (default: all) minus ``--ignore``, in report order; unknown names are errors."""
    chosen = list(CHECKERS) if checks is None else _known(checks, "--checks")
    dropped = set(_known(ignore, "--ignore"))
    selected = [CHECKERS[n] for n in CHECKERS if n in chosen and n not in dropped]
    if not selected:
        raise DiffInputError("no checks left to run after --checks / --ignore; valid checks: " + ", ".join(CHECKERS))
    return selected


def _known(names: Iterable[str], option: str) -> list[str]:
    out = []
    for name in names:
        if name not in CHECKERS:
            hint = did_you_mean(name, CHECKERS, list_max=len(CHECKERS))  # a user picking checks needs them all
            raise DiffInputError(f"{option}: unknown check {name!r}" + (f"; {hint}" if hint else ""))
        out.append(name)
    return out


def parse_names(value: str | None) -> list[str] | None:
    """``"a, b"`` → ``["a", "b"]``; None stays None (the option was not given)."""
    if value is None:
        return None
    return [n.strip() for n in value.split(",") if n.strip()]


__all__ = ["CHECKERS", "INPUTS", "UNCHECKED_FIELDS", "Checker", "parse_names", "select_checkers"]
