"""How a conformance run is shown: a terminal matrix, stable JSON, GitHub annotations, and the rule list.

- ``text``: one row per plan, one column per rule (numbered; the legend names each), ``+``
  accepted, ``X`` rejected, ``.`` not applicable; then one line per rejection with the provider's
  status and text, the scenario and the request, then every scenario that could not run cleanly.
- ``json``: ``conformance_version``, ``rules`` (with their sources), ``plans`` (target, capplan's
  warnings while building its requests, and each scenario's run), ``cells`` (``rule_id``, ``plan``, ``status``, ``detail``, ``scenario``,
  ``request``, ``http_status``, ``error``, ``also_in``: the other scenarios that broke it) and
  ``summary``. Keys are never removed within a version.
- ``github``: one ``::error`` workflow command per rejection and per scenario error, titled with
  the rule id, placed on the plan file.
- ``markdown`` (for ``--list-rules``): every rule with its scope, error and sources; this is
  docs/conformance.md's rule section, generated and checked against the corpus by a test.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from capplan.conformance.corpus import Corpus, Rule
from capplan.conformance.runner import Cell, Matrix

#: the JSON report's format; bumped only when a key changes meaning or goes away
CONFORMANCE_VERSION = 1
FORMATS = ("text", "json", "github")
RULE_FORMATS = ("text", "json", "markdown")
MARK = {"accepted": "+", "rejected": "X", "not_applicable": "."}


def render(matrix: Matrix, fmt: str) -> str:
    """The run in ``fmt`` (one of :data:`FORMATS`)."""
    if fmt == "json":
        return json.dumps(as_json(matrix), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if fmt == "github":
        return render_github(matrix)
    return render_text(matrix)


def _counts(cells: Sequence[Cell]) -> dict[str, int]:
    counts = {"accepted": 0, "rejected": 0, "not_applicable": 0}
    for cell in cells:
        counts[cell.status] += 1
    return counts


def summary_line(matrix: Matrix) -> str:
    counts = _counts(matrix.cells)
    errors = len(matrix.errors)
    line = (f"{len(matrix.plans)} plan(s) x {len(matrix.corpus.rules)} rule(s): {counts['accepted']} accepted, "
            f"{counts['rejected']} rejected, {counts['not_applicable']} not applicable")
    if errors:
        line += f"; {errors} scenario run(s) failed outside any rule"
    return line


def render_text(matrix: Matrix) -> str:
    by_plan: dict[str, dict[str, Cell]] = {}
    for cell in matrix.cells:
        by_plan.setdefault(cell.plan, {})[cell.rule_id] = cell
    # a column only for the rules some plan is held to: the others are named once, below the legend
    held = {cell.rule_id for cell in matrix.cells if cell.status != "not_applicable"}
    rules = tuple(rule for rule in matrix.corpus.rules if rule.id in held)
    idle = [rule.id for rule in matrix.corpus.rules if rule.id not in held]
    width = max([len(p.key) for p in matrix.plans] + [4])
    lines = []
    numbers = [str(i + 1) for i in range(len(rules))]
    # column headers: the rule numbers written vertically, so a column stays one character wide
    depth = max((len(n) for n in numbers), default=1)
    for row in range(depth):
        lines.append(" " * (width + 2) + " ".join(n.rjust(depth)[row] for n in numbers).rstrip())
    for plan in matrix.plans:
        cells = by_plan.get(plan.key, {})
        marks = " ".join(MARK[cells[r.id].status] if r.id in cells else " " for r in rules)
        where = f"{plan.target.protocol} on {plan.target.route}" if plan.target else plan.unheld or ""
        lines.append(f"{plan.key.ljust(width)}  {marks}   {where}")
    lines.append("")
    lines.append("+ accepted   X rejected   . not applicable (--format json says why)")
    for number, rule in zip(numbers, rules):
        lines.append(f"{number.rjust(depth)} {rule.id}: {rule.title}")
    if idle:
        lines.append(f"no plan here is held to {len(idle)} rule(s) (other protocols, routes or models; no column): "
                     + ", ".join(idle))
    rejected = matrix.rejected
    if rejected:
        lines.append("")
        lines.append("rejected:")
        for cell in rejected:
            also = f"; also in {', '.join(cell.also)}" if cell.also else ""
            lines.append(f"  {cell.plan} x {cell.rule_id}: HTTP {cell.http_status} \"{cell.detail}\" "
                         f"(scenario {cell.scenario}, request {cell.request}{also})")
    refused = [(p.key, s) for p in matrix.plans for s in p.scenarios if s.status == "refused_by_plan"]
    if refused:
        lines.append("")
        lines.append("refused by the plan before sending (counted as accepted: the provider never saw them):")
        for key, scenario in refused:
            lines.append(f"  {key} / {scenario.scenario}: {scenario.detail}")
    if matrix.errors:
        lines.append("")
        lines.append("scenario errors (no provider rule; the run cannot vouch for these):")
        for key, scenario in matrix.errors:
            lines.append(f"  {key} / {scenario.scenario}: {scenario.detail}")
    lines.append("")
    lines.append(summary_line(matrix))
    return "\n".join(lines) + "\n"


def _escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape(text).replace(",", "%2C").replace(":", "%3A")


def render_github(matrix: Matrix) -> str:
    where = {plan.key: plan.where for plan in matrix.plans}
    lines = []
    for cell in matrix.rejected:
        body = (f"{cell.plan}: the provider answers HTTP {cell.http_status} \"{cell.detail}\" "
                f"(scenario {cell.scenario}, request {cell.request})")
        lines.append(f"::error file={_escape_property(where.get(cell.plan, cell.plan))},line=1,col=1,"
                     f"title=capplan conformance {_escape_property(cell.rule_id)}::{_escape(body)}")
    for key, scenario in matrix.errors:
        lines.append(f"::error file={_escape_property(where.get(key, key))},line=1,col=1,"
                     f"title=capplan conformance scenario {_escape_property(scenario.scenario)}::"
                     f"{_escape(f'{key}: {scenario.detail}')}")
    lines.append(summary_line(matrix))
    return "\n".join(lines) + "\n"


def rule_json(rule: Rule) -> dict[str, Any]:
    return rule.model_dump(mode="json")


def as_json(matrix: Matrix) -> dict[str, Any]:
    plans = []
    for plan in matrix.plans:
        target = plan.target
        plans.append({
            "plan": plan.key, "where": plan.where, "unheld": plan.unheld,
            "protocol": target.protocol if target else None, "route": target.route if target else None,
            "model": target.model if target else None, "transport": target.transport if target else None,
            "warnings": list(plan.warnings),
            "scenarios": [{"scenario": s.scenario, "status": s.status, "detail": s.detail, "requests": s.requests,
                           "notes": list(s.notes)} for s in plan.scenarios],
        })
    cells = [{"rule_id": c.rule_id, "plan": c.plan, "status": c.status, "detail": c.detail, "scenario": c.scenario,
              "request": c.request, "http_status": c.http_status, "error": c.error, "also_in": list(c.also)}
             for c in matrix.cells]
    counts = _counts(matrix.cells)
    return {"conformance_version": CONFORMANCE_VERSION, "rules": [rule_json(r) for r in matrix.corpus.rules],
            "plans": plans, "cells": cells, "summary": {**counts, "errors": len(matrix.errors),
                                                         "exit_code": matrix.exit_code}}


# --- the rule list ----------------------------------------------------------------------------------


def render_rules(corpus: Corpus, fmt: str) -> str:
    """Every rule of ``corpus`` in ``fmt`` (one of :data:`RULE_FORMATS`)."""
    if fmt == "json":
        return json.dumps({"conformance_version": CONFORMANCE_VERSION, "rules": [rule_json(r) for r in corpus.rules]},
                          indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if fmt == "markdown":
        return rules_markdown(corpus)
    lines = []
    for rule in corpus.rules:
        lines.append(f"{rule.id}  [{rule.protocol}: {', '.join(rule.routes)}; models {', '.join(rule.models)}]")
        lines.append(f"    {rule.title}")
        for source in rule.sources:
            lines.append(f"    source: {source.url} ({source.observed.isoformat()})")
    lines.append(f"{len(corpus.rules)} rule(s)")
    return "\n".join(lines) + "\n"


def _code(text: str) -> str:
    """``text`` as inline code, whatever backticks it holds."""
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


PAGE_INTRO = """# Provider conformance

<!-- Generated: capplan conformance --list-rules --format markdown > docs/conformance.md
     (tests/conformance/test_conformance_docs.py fails when this page drifts from the corpus) -->

Providers refuse requests for reasons a plan can know in advance: a thinking block replayed with
the wrong signature, a tool-call turn without the reasoning the model must see again, a
temperature a model does not take, a JSON-Schema keyword a schema dialect does not know.
`capplan conformance` proves, offline, that every compiled plan keeps the rules providers
actually enforce.

- **The corpus** is data (`capplan/presets/conformance/*.yaml`): one rule per refusal, with
  the protocol, the routes and models it holds for, the condition, the provider's exact status
  and error body, and the public sources it was observed in, each with its date.
- **Strict emulators**, one per protocol (OpenAI chat completions, Anthropic Messages, ...),
  listen on 127.0.0.1, answer a broken rule with the provider's exact error, and otherwise
  answer like the provider, minting reasoning carriers (signatures, encrypted payloads) bound
  to route, model and text that a replay must return intact.
- **Scenarios** drive each plan through capplan's real path (executor, direct or litellm
  transport, the trial loop): a tool loop of three steps, parallel calls, two user turns,
  thinking on and off, a model switch and a route switch mid-conversation, a context handoff,
  cache markers, tool schemas with `additionalProperties`, `$schema`, `const`,
  `propertyNames`, `anyOf` and `$ref`, temperature 0, every effort level and every
  `tool_choice` form.

## Running it

```
capplan conformance                                  # the bundled catalogue, compiled in memory
capplan conformance golden/plans/ --format json      # plan files or folders
capplan conformance --presets-file overlay.yaml      # your models, with your overlays
capplan conformance --rules 'anthropic.*' --format github
```

The text format prints a plan x rule matrix (`+` accepted, `X` rejected, `.` not applicable),
then one line per rejection with the provider's status and text, the scenario and the index of
the request in it. `--format json` is stable (`conformance_version` 1): `rules` with their
sources, `plans` with capplan's own warnings (a parameter it did not send, reasoning it left out)
and each scenario's run, and `cells` with `rule_id`, `plan`, `status`
(`accepted`, `rejected`, `not_applicable`), `detail` (why, or the provider's text), `scenario`,
`request`, `http_status`, `error` and `also_in` (the other scenarios that broke it).
`--format github` annotates each rejection.

A cell is **accepted** when the rule applies to the plan (protocol, route, model as sent) and
some scenario's request was held to it without breaking it; **rejected** when a request broke
it; **not applicable** when the rule is another protocol's, route's or model's, or no scenario
sent a request it holds. A value capplan itself refuses before sending (a plan's value rule)
is listed apart: the provider never saw it. The offline mock plan is held to nothing.

Exit codes: 0 nothing rejected, 1 a rejection (or a scenario that failed outside any rule),
2 bad input (an unknown rule id, a corrupt rules file or plan, a plan whose protocol no
emulator speaks). No credential is read: each client gets a dummy key and sends only to the
loopback emulator. `capplan diff` reports a change that flips a cell (see [Plans in CI](ci.md)).

"""


def rules_markdown(corpus: Corpus) -> str:
    """The rule section of docs/conformance.md: one entry per rule, with its error and every source."""
    from capplan.conformance.emulator import _message_of

    lines = [PAGE_INTRO, f"## The rules ({len(corpus.rules)})", ""]
    for rule in corpus.rules:
        lines.append(f"### `{rule.id}`")
        lines.append("")
        lines.append(rule.title)
        lines.append("")
        lines.append(f"- protocol: `{rule.protocol}`; routes: {', '.join(f'`{r}`' for r in rule.routes)}; "
                     f"models: {', '.join(_code(m) for m in rule.models)}")
        message = _message_of(rule.error) or json.dumps(rule.error, sort_keys=True)
        lines.append(f"- answer: HTTP {rule.status}, {_code(' '.join(message.split()))}")
        if rule.principle:
            lines.append(f"- principle: {rule.principle}")
        for source in rule.sources:
            note = f": {' '.join(source.note.split())}" if source.note else ""
            lines.append(f"- source: <{source.url}> (observed {source.observed.isoformat()}){note}")
        lines.append("")
    return "\n".join(lines)
