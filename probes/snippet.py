"""The overlay snippet a probe writes: what the route answered, as a ``probe_evidence:`` entry of its own route.

``<plan key>.overlay.yaml`` is an operator overlay (``capplan compile --presets-file``) with one
``probe_evidence:`` entry: the route's identity (provider key, wire protocol, model as the request
named it, gateway route, endpoint, transport), the date, the capplan version, and per measured
value of a rulable parameter its outcome, status, the provider's exact error text and the request
fingerprint. The compiler applies it to the plans on that route only
(:mod:`capplan.compiler.probe_evidence`): a refusal becomes a ``reject`` rule whose evidence
says all that, an acceptance lifts a ``reject`` the presets wrote. So the snippet compiles with
the whole catalogue, and every other plan stays as it was.

Only answers about one value are written, and only when the plan's own request was accepted on
the same route: a route that refuses everything (a wrong key would answer 401, but a wrong
endpoint may answer 400) says nothing about any one value. ``not measured`` and ``skipped``
questions stay in ``<plan key>.probe.json``.
"""

from __future__ import annotations

import json

from capplan.executor.value_rules import RULABLE_PARAMS
from capplan.probes.evidence import ProbeRecord, QuestionResult


def evidence_text(record: ProbeRecord, result: QuestionResult) -> str:
    """One answer in a line: date, version, route, fingerprint, status, exact text (for messages)."""
    return (f"{record.date}, capplan {record.capplan_version} probe of {record.route.text()}: request "
            f"sha256:{result.fingerprint} answered HTTP {result.outcome.status} {json.dumps(result.outcome.detail or '')}")


def rule_results(record: ProbeRecord) -> list[QuestionResult]:
    """The refusals that become rules (none when the plan's own request was not accepted)."""
    return [r for r in evidence_results(record) if r.outcome.kind == "refused"]


def evidence_results(record: ProbeRecord) -> list[QuestionResult]:
    """The answers about one rulable value, refused or accepted (none when the baseline was not accepted)."""
    if not record.baseline_accepted:
        return []
    return [r for r in record.results
            if r.outcome.kind in ("refused", "accepted") and r.rule_key is not None and r.param in RULABLE_PARAMS
            and r.fingerprint is not None]


def snippet_text(record: ProbeRecord, provider: str) -> str:
    """The overlay snippet for ``record`` (``probe_evidence: []`` when no answer is about one value).

    ``provider`` is the plan's provider key (its binding), part of the route's identity.
    """
    route = record.route
    lines = [
        f"# capplan probe of plan {_plain(record.plan_key)} ({record.date}, capplan {_plain(record.capplan_version)})",
        f"# route: {_plain(route.text())}",
        f"# Applies to the plans on this route only (provider {_plain(provider)}, {route.protocol}, model",
        f"# {_plain(route.model)}): capplan compile --presets-file THIS_FILE, with the whole catalogue if you like.",
    ]
    if not record.baseline_accepted:
        lines.append("# No evidence: the plan's own request was not accepted, so no refusal here is about one value.")
    chosen = evidence_results(record)
    if not chosen:
        lines += ["probe_evidence: []", ""]
        return "\n".join(lines)
    lines += [
        "probe_evidence:",
        f"  - provider: {_quoted(provider)}",
        f"    protocol: {_quoted(route.protocol)}",
        f"    model: {_quoted(route.model)}",
        f"    gateway_route: {_quoted(route.gateway_route) if route.gateway_route else 'null'}",
        f"    endpoint: {_quoted(route.endpoint)}",
        f"    transport: {_quoted(route.transport)}",
        f"    date: {_quoted(record.date)}",
        f"    capplan_version: {_quoted(record.capplan_version)}",
        f"    plan: {_quoted(record.plan_key)}",
        "    values:",
    ]
    by_param: dict[str, list[QuestionResult]] = {}
    for result in chosen:
        by_param.setdefault(result.param, []).append(result)
    for param, results in by_param.items():
        lines.append(f"      {param}:")
        for result in results:
            outcome = result.outcome
            lines.append(f"        {_key(param, result.rule_key or '')}:")
            lines.append(f"          outcome: {outcome.kind}")
            lines.append(f"          status: {outcome.status}")
            if outcome.kind == "refused":
                lines.append(f"          error: {_quoted(outcome.detail or '')}")
            lines.append(f"          fingerprint: {_quoted(result.fingerprint or '')}")
    lines.append("")
    return "\n".join(lines)


def _key(param: str, key: str) -> str:
    # a number or a boolean key is written as YAML reads it back (the compiler keys rules by value)
    if RULABLE_PARAMS[param] in (float, bool):
        return key
    return _quoted(key)


def _quoted(text: str) -> str:
    """A YAML double-quoted scalar that reads back as exactly ``text``.

    JSON's escapes are YAML's. ``json.dumps`` escapes the C0 controls but leaves other unprintable
    characters raw (U+2028, NEL), which YAML would read as a line break: those are escaped after
    dumping, as YAML escapes, so a provider's error text with a newline stays the same text.
    """
    dumped = json.dumps(text, ensure_ascii=False)
    return "".join(ch if ch.isprintable() else _yaml_escape(ch) for ch in dumped)


def _yaml_escape(ch: str) -> str:
    code = ord(ch)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _plain(text: str) -> str:
    return "".join(ch if ch.isprintable() else f"\\u{ord(ch):04x}" for ch in text)
