"""The overlay snippet a probe writes: each refusal as a ``param_value_rules`` ``reject`` with its evidence.

``<plan key>.overlay.yaml`` is an operator overlay (``capplan compile --presets-file``). Its rules
sit in a ``providers: <provider>: params:`` block, the only place an overlay can add a value rule
without replacing the model's preset wholesale (an overlay ``presets:`` entry that matched the
model would take the bundled preset's place, policies and all). Such a block reaches every model
of that provider, so the snippet says so in its header and is meant to be compiled for the
probed model (``capplan compile --model KEY``) or merged by hand; scoping evidence to one route
in the compiler is later work (docs/probe.md).

Only refusals of a rulable parameter become rules, and only when the plan's own request was
accepted on the same route: a route that refuses everything (a wrong key would answer 401, but a
wrong endpoint may answer 400) says nothing about any one value.
"""

from __future__ import annotations

import json

from capplan.executor.value_rules import RULABLE_PARAMS
from capplan.probes.evidence import ProbeRecord, QuestionResult


def evidence_text(record: ProbeRecord, result: QuestionResult) -> str:
    """The ``evidence:`` string of one refusal: date, version, route, fingerprint, status, exact text."""
    return (f"{record.date}, capplan {record.capplan_version} probe of {record.route.text()}: request "
            f"sha256:{result.fingerprint} answered HTTP {result.outcome.status} {json.dumps(result.outcome.detail or '')}")


def rule_results(record: ProbeRecord) -> list[QuestionResult]:
    """The refusals that become rules (none when the plan's own request was not accepted)."""
    if not record.baseline_accepted:
        return []
    return [r for r in record.results
            if r.outcome.kind == "refused" and r.rule_key is not None and r.param in RULABLE_PARAMS]


def snippet_text(record: ProbeRecord, provider: str) -> str:
    """The overlay snippet for ``record`` (a valid, empty ``providers:`` block when nothing was refused)."""
    lines = [
        f"# capplan probe of plan {record.plan_key} ({record.date}, capplan {record.capplan_version})",
        f"# route: {_plain(record.route.text())}",
        f"# An overlay's providers: block reaches every model of provider {provider!r}: compile it for",
        f"# this model only (capplan compile --model {_plain(record.plan_key)} --presets-file THIS_FILE).",
    ]
    if not record.baseline_accepted:
        lines.append("# No rule: the plan's own request was not accepted, so no refusal here is about one value.")
    chosen = rule_results(record)
    if not chosen:
        lines += ["providers: {}", ""]
        return "\n".join(lines)
    lines += ["providers:", f"  {_quoted(provider)}:", "    params:", "      param_value_rules:"]
    by_param: dict[str, list[QuestionResult]] = {}
    for result in chosen:
        by_param.setdefault(result.param, []).append(result)
    for param, results in by_param.items():
        lines.append(f"        {param}:")
        for result in results:
            lines.append(f"          {_key(param, result.rule_key or '')}:")
            lines.append("            action: reject")
            lines.append(f"            evidence: {_quoted(evidence_text(record, result))}")
    lines.append("")
    return "\n".join(lines)


def _key(param: str, key: str) -> str:
    # a number or a boolean key is written as YAML reads it back (the compiler keys rules by value)
    if RULABLE_PARAMS[param] in (float, bool):
        return key
    return _quoted(key)


def _quoted(text: str) -> str:
    """A YAML double-quoted scalar: JSON's escapes are YAML's, once every unprintable character is
    spelled out (a raw U+2028 or NEL would be read as a line break)."""
    return json.dumps(_plain(text), ensure_ascii=False)


def _plain(text: str) -> str:
    return "".join(ch if ch.isprintable() else f"\\u{ord(ch):04x}" for ch in text)
