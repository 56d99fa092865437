"""``summary.md`` and ``summary.json``: one row per model × task pack, from ``runs.jsonl``.

The pass rate's denominator is the graded trials plus the harness errors (``error``: a refused
user reply, a failed simulator call) of tasks that have a grader: the spec keeps those in the
denominator as not passed, and they are shown in their own column. Aborted trials (rate
limits, timeouts, infrastructure) are excluded, and trials whose task has no grader are not
graded. A cost nobody knows is never summed as 0: each cost column leaves those trials out
and a column counts them.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from capplan.trials.records import CostStat, Summary, SummaryRow, TokenStat
from capplan.trials.report.text import md_cell, md_table

#: z for a two-sided 95 % interval
_Z95 = 1.959963984540054
_TOKEN_KEYS = {"prompt": "prompt_tokens", "completion": "completion_tokens", "reasoning": "reasoning_tokens",
               "cache_read": "cache_read_tokens", "cache_write": "cache_write_tokens"}


def wilson_interval(successes: int, n: int, z: float = _Z95) -> tuple[float, float] | None:
    """The Wilson score interval of a binomial proportion; None for n = 0."""
    if n <= 0:
        return None
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def pass_hat_k(per_task: Sequence[tuple[int, int]], k: int) -> float | None:
    """tau-bench's pass^k: per task C(c, k) / C(n, k) (c passes of n trials), averaged over the tasks.

    Tasks with fewer than k trials cannot say whether k trials in a row pass, so they are left
    out; None when no task has k trials.
    """
    values = [math.comb(c, k) / math.comb(n, k) for c, n in per_task if n >= k]
    return sum(values) / len(values) if values else None


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-quantile (0..1) by linear interpolation between closest ranks; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 9)


def split_unknown(line: dict[str, Any]) -> bool:
    """A line written before the user simulator's cost had its own field: its cost_usd is agent + user combined."""
    return line.get("user_cost_source") is None and line.get("user_cost_usd") is None


def _agent_cost(line: dict[str, Any]) -> float | None:
    if split_unknown(line):
        return None  # the agent's part of a combined cost is unknown; the total still counts it
    return line.get("cost_usd")


def _user_cost(line: dict[str, Any]) -> float | None:
    if split_unknown(line):
        return None
    value = line["user_cost_usd"]
    if value is None and line.get("user_cost_source") in (None, "none"):
        return 0.0  # no simulator call: nothing was spent, which is known
    return value  # type: ignore[no-any-return]


def _cost_stat(values: list[float | None]) -> CostStat:
    known = [v for v in values if v is not None]
    return CostStat(total_usd=_round(sum(known)) if known else None,
                    mean_usd=_round(sum(known) / len(known)) if known else None,
                    unknown_trials=len(values) - len(known))


def _tokens(lines: list[dict[str, Any]], field: str) -> TokenStat | None:
    blocks = [line[field] for line in lines if isinstance(line.get(field), dict)]
    if not blocks:
        return None
    return TokenStat(**{name: sum(int(b.get(key, 0)) for b in blocks) for name, key in _TOKEN_KEYS.items()})


def _mean_tokens(total: TokenStat | None, n: int) -> TokenStat | None:
    if total is None or n == 0:
        return None
    return TokenStat(**{name: getattr(total, name) / n for name in _TOKEN_KEYS})


def _row(plan_key: str, pack: str, group: list[dict[str, Any]]) -> SummaryRow:
    counted = [g for g in group if g["counts_against_model"]]
    errors = [g for g in group if g["status"] == "error"]
    graded = [g for g in counted if g["passed"] is not None]
    passed = sum(1 for g in graded if g["passed"])
    per_task: dict[str, list[bool]] = defaultdict(list)
    for g in graded:
        per_task[g["task_id"]].append(bool(g["passed"]))
    fewest = min((len(v) for v in per_task.values()), default=0)
    hat = ({str(k): v for k in range(1, fewest + 1)
            if (v := pass_hat_k([(sum(r), len(r)) for r in per_task.values()], k)) is not None}
           if fewest > 1 else None)
    agent = [_agent_cost(g) for g in group]
    user = [_user_cost(g) for g in group]
    both = [g.get("cost_usd") if split_unknown(g) else a + u if a is not None and u is not None else None
            for g, a, u in zip(group, agent, user)]
    known_both = [b for b in both if b is not None]
    agent_tokens, user_tokens = _tokens(group, "usage"), _tokens(group, "user_usage")
    calls = [g["n_calls"] for g in group if g.get("n_calls") is not None]
    latencies = [float(g["latency_s"]) for g in group if g.get("latency_s") is not None]
    retries: Counter[str] = Counter()
    for g in group:
        retries.update(g.get("retries") or {})
    rate = passed / len(graded) if graded else None
    interval = wilson_interval(passed, len(graded))
    return SummaryRow(
        plan_key=plan_key, task_pack=pack, trials=len(group), counted=len(counted), passed=passed,
        failed=sum(1 for g in graded if g["passed"] is False and g["status"] != "error"),
        error=len(errors), aborted=sum(1 for g in group if g["status"] == "aborted"),
        graded=len(graded), pass_rate=_round(rate),
        pass_rate_ci95=(round(interval[0], 9), round(interval[1], 9)) if interval else None,
        pass_hat_k={k: round(v, 9) for k, v in hat.items()} if hat else None,
        mean_cost_usd=_round(sum(known_both) / len(known_both)) if known_both else None,
        agent_cost=_cost_stat(agent), user_cost=_cost_stat(user),
        mean_tokens=_round(sum(g["total_tokens"] for g in group) / len(group)),
        agent_tokens=agent_tokens, user_tokens=user_tokens,
        mean_agent_tokens=_mean_tokens(agent_tokens, len(group)),
        mean_user_tokens=_mean_tokens(user_tokens, len(group)),
        mean_turns=_round(sum(g["turns"] for g in group) / len(group)),
        total_calls=sum(calls) if calls else None, mean_calls=_round(sum(calls) / len(calls)) if calls else None,
        retries=dict(sorted(retries.items())),
        latency_p50_s=_round(percentile(latencies, 0.5)), latency_p95_s=_round(percentile(latencies, 0.95)),
        termination_reasons=dict(sorted(Counter(g["termination_reason"] for g in group).items())),
    )


def summarize(lines: Iterable[dict[str, Any]], *, unfinished_cost_usd: float = 0.0) -> Summary:
    """The summary of the finished lines; ``unfinished_cost_usd`` is what trials that never finished spent."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for line in lines:
        groups[(line["plan_key"], line["task_pack"])].append(line)
    rows = [_row(plan_key, pack, group) for (plan_key, pack), group in sorted(groups.items())]
    all_lines = [g for group in groups.values() for g in group]
    agent = [_agent_cost(g) for g in all_lines]
    user = [_user_cost(g) for g in all_lines]
    agent_total = sum(v for v in agent if v is not None)
    user_total = sum(v for v in user if v is not None)
    # older lines' combined cost is known and spent: in the total, though in neither the agent's nor the user's part
    unsplit = sum(g["cost_usd"] for g in all_lines if split_unknown(g) and g.get("cost_usd") is not None)
    unknown = sum(1 for g, a, u in zip(all_lines, agent, user)
                  if (a is None or u is None) and not (split_unknown(g) and g.get("cost_usd") is not None))
    return Summary(rows=rows, total_cost_usd=round(agent_total + user_total + unsplit + unfinished_cost_usd, 9),
                   agent_cost_usd=round(agent_total, 9), user_cost_usd=round(user_total, 9),
                   unfinished_cost_usd=round(unfinished_cost_usd, 9), unknown_cost_trials=unknown,
                   trials=len(all_lines))


def _cell(text: object) -> str:
    # a model key or pack name is the user's text: escapes, control characters and pipes are made harmless
    return md_cell(text)


def _usd(value: float | None, digits: int = 6) -> str:
    return "unknown" if value is None else f"{value:.{digits}f}"


def _rate(value: float | None) -> str:
    return f"{value:.1%}" if value is not None else "—"


#: the statistics columns of a summary row, as summary.md and ``trial report`` show them
ROW_HEADER = ["trials", "pass rate", "95 % CI", "pass^k", "passed / graded", "failed", "error", "aborted",
              "mean agent cost (USD)", "mean user cost (USD)", "unknown cost", "mean tokens", "mean turns",
              "latency p50 / p95 (s)", "termination reasons", "retries"]
ROW_ALIGN = "rrrlrrrrrrrrrrll"


def row_cells(r: SummaryRow) -> list[str]:
    """A summary row's statistics as table cells (raw text: the table escapes them)."""
    interval = f"{r.pass_rate_ci95[0]:.1%}–{r.pass_rate_ci95[1]:.1%}" if r.pass_rate_ci95 else "—"
    hat = ", ".join(f"^{k} {v:.1%}" for k, v in r.pass_hat_k.items()) if r.pass_hat_k else "—"
    agent, user = r.agent_cost, r.user_cost
    unknown = max(agent.unknown_trials if agent else 0, user.unknown_trials if user else 0)
    latency = ("—" if r.latency_p50_s is None or r.latency_p95_s is None
               else f"{r.latency_p50_s:.2f} / {r.latency_p95_s:.2f}")
    reasons = ", ".join(f"{k} {v}" for k, v in r.termination_reasons.items())
    # the loop's retry classes and the transport's (transport_rate_limit, transport_server_error, …), by name
    retries = ", ".join(f"{k} {v}" for k, v in r.retries.items()) or "—"
    return [str(r.trials), _rate(r.pass_rate), interval, hat, f"{r.passed} / {r.graded}", str(r.failed),
            str(r.error), str(r.aborted), _usd(agent.mean_usd if agent else None),
            _usd(user.mean_usd if user else None), str(unknown), f"{(r.mean_tokens or 0):.0f}",
            f"{(r.mean_turns or 0):.1f}", latency, reasons, retries]


def render_markdown(summary: Summary) -> str:
    total = f"${summary.total_cost_usd:.4f}"
    if summary.unknown_cost_trials:
        total = ("unknown" if summary.total_cost_usd == 0 else f"{total} known") + \
            f" ({summary.unknown_cost_trials} trial(s) of unknown cost)"
    lines = [
        "# Trial summary",
        "",
        f"{summary.trials} finished trial(s), total cost {total}"
        + (f" (agent ${summary.agent_cost_usd:.4f}, user ${summary.user_cost_usd:.4f}"
           + (f", unfinished trials ${summary.unfinished_cost_usd:.4f}" if summary.unfinished_cost_usd else "")
           + ")" if summary.trials or summary.unfinished_cost_usd else "") + ".",
        "",
    ]
    lines += md_table(["model", "task pack", *ROW_HEADER],
                      [[r.plan_key, r.task_pack, *row_cells(r)] for r in summary.rows], align="ll" + ROW_ALIGN)
    lines += ["", "Aborted trials (rate limit, timeout, infrastructure, configuration) are excluded from the pass "
              "rate; harness errors stay in it as not passed. Costs leave out trials of unknown cost, counted "
              "apart.", ""]
    return "\n".join(lines)


def render_json(summary: Summary) -> str:
    return json.dumps(summary.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"
