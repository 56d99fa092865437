"""``summary.md`` and ``summary.json``: one row per model × task pack, from ``runs.jsonl``.

The pass rate's denominator is the trials that count against the model: aborted trials
(rate limits, timeouts, infrastructure) are listed in the termination reasons but excluded,
and trials whose task has no grader are not graded.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

from capplan.trials.records import Summary, SummaryRow


def summarize(lines: Iterable[dict[str, Any]]) -> Summary:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for line in lines:
        groups[(line["plan_key"], line["task_pack"])].append(line)
    rows = []
    for (plan_key, pack), group in sorted(groups.items()):
        counted = [g for g in group if g["counts_against_model"]]
        graded = [g for g in counted if g["passed"] is not None]
        passed = sum(1 for g in graded if g["passed"])
        rows.append(SummaryRow(
            plan_key=plan_key, task_pack=pack, trials=len(group), counted=len(counted), passed=passed,
            graded=len(graded), pass_rate=passed / len(graded) if graded else None,
            mean_cost_usd=sum(g["cost_usd"] for g in group) / len(group),
            mean_tokens=sum(g["total_tokens"] for g in group) / len(group),
            termination_reasons=dict(sorted(Counter(g["termination_reason"] for g in group).items())),
        ))
    all_lines = [g for group in groups.values() for g in group]
    return Summary(rows=rows, total_cost_usd=sum(g["cost_usd"] for g in all_lines), trials=len(all_lines))


def render_markdown(summary: Summary) -> str:
    out = [
        "# Trial summary",
        "",
        f"{summary.trials} finished trial(s), total cost ${summary.total_cost_usd:.4f}.",
        "",
        "| model | task pack | trials | pass rate | passed / graded | mean cost (USD) | mean tokens | termination reasons |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in summary.rows:
        rate = f"{r.pass_rate:.1%}" if r.pass_rate is not None else "—"
        reasons = ", ".join(f"{k} {v}" for k, v in r.termination_reasons.items())
        out.append(f"| {r.plan_key} | {r.task_pack} | {r.trials} | {rate} | {r.passed} / {r.graded} | "
                   f"{(r.mean_cost_usd or 0):.6f} | {(r.mean_tokens or 0):.0f} | {reasons} |")
    out += ["", "Aborted trials (rate limit, timeout, infrastructure) are excluded from the pass rate.", ""]
    return "\n".join(out)


def render_json(summary: Summary) -> str:
    return json.dumps(summary.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"
