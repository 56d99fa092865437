"""``summary.md`` and ``summary.json``: one row per model × task pack, from ``runs.jsonl``.

The pass rate's denominator is the graded trials plus the harness errors (``error``: a failed
simulator call, a grader that raised) of tasks that have a grader: the spec keeps those in the
denominator as not passed, and they are shown in their own column. A trial whose user simulator
broke (``user_simulator_failure``: a reply the guard refused, a loop, an end before the agent
answered) is the simulator's, not the agent's: it is left out of the pass rate and pass^k and
counted beside them, as the user-simulator failure rate over the trials that ran to an end. Aborted trials (rate
limits, timeouts, infrastructure) are excluded, and trials whose task has no grader are not
graded. A cost or a token count nobody knows is never summed as 0: each total and mean is
over the trials whose value is known, a count beside it says how many were left out (a total
is then a lower bound, shown as "≥ $X (+ N unknown)"), and it is null when none is known.
Sums of dollars and of pass^k's terms are exact (``math.fsum``), so a total does not depend on the
order the trials finished in: with worker processes that order changes from run to run, and a
plain sum's last bit, rounded to nine places, once made two runs of the same trials disagree.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from capplan.trials.outcome import PASS_RULE
from capplan.trials.run_folder.records import CostStat, Summary, SummaryRow, TokenStat
from capplan.trials.safe_text import md_cell, md_table

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
    return math.fsum(values) / len(values) if values else None


def pass_hat_ks(per_task: Sequence[tuple[int, int]]) -> tuple[dict[str, float], dict[str, int]] | None:
    """pass^k for k = 1 .. the most graded trials of a task, and for each k how many tasks it averages over.

    Each k leaves out only the tasks with fewer than k graded trials (one aborted trial takes its
    task out of the highest k, not the row out of pass^k); None when no task has two trials.
    """
    most = max((n for _, n in per_task), default=0)
    if most < 2:
        return None
    values: dict[str, float] = {}
    tasks: dict[str, int] = {}
    for k in range(1, most + 1):
        value = pass_hat_k(per_task, k)
        if value is not None:  # always so up to the most trials; kept honest for the type checker
            values[str(k)] = round(value, 9)
            tasks[str(k)] = sum(1 for _, n in per_task if n >= k)
    return values, tasks


def pass_hat_k_text(values: dict[str, float] | None, tasks: dict[str, int] | None) -> str:
    """``^1 75.0%, ^2 50.0% (3 of 4 tasks)``: how many tasks a k covers, where it leaves some out."""
    if not values:
        return "—"
    every = (tasks or {}).get("1")
    parts = []
    for k, value in values.items():
        covered = (tasks or {}).get(k)
        left_out = covered is not None and every is not None and covered < every
        parts.append(f"^{k} {value:.1%}" + (f" ({covered} of {every} tasks)" if left_out else ""))
    return ", ".join(parts)


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


def _known_part(line: dict[str, Any], field: str) -> float:
    """What a trial of unknown cost is known to have spent (its calls of known cost); 0 for an older line."""
    value = line.get(field)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _cost_stat(values: list[float | None], parts: list[float]) -> CostStat:
    """Every known dollar (trials of unknown cost add their known part), the mean over the trials of known cost."""
    known = [v for v in values if v is not None]
    spent = math.fsum(known) + math.fsum(part for v, part in zip(values, parts) if v is None)
    return CostStat(total_usd=_round(spent) if known or spent else None,
                    mean_usd=_round(math.fsum(known) / len(known)) if known else None,
                    unknown_trials=len(values) - len(known))


def _tokens(lines: list[dict[str, Any]], field: str) -> TokenStat | None:
    blocks = [line[field] for line in lines if isinstance(line.get(field), dict)]
    if not blocks:
        return None
    return TokenStat(**{name: sum(int(b.get(key, 0)) for b in blocks) for name, key in _TOKEN_KEYS.items()})


def _mean_tokens(total: TokenStat | None, lines: list[dict[str, Any]], field: str) -> TokenStat | None:
    n = sum(1 for line in lines if isinstance(line.get(field), dict))  # the trials the sum is over
    if total is None or n == 0:
        return None
    return TokenStat(**{name: getattr(total, name) / n for name in _TOKEN_KEYS})


def _known_sum(values: list[float | None]) -> float | None:
    """The sum of the known values; None when none is known (never a made-up 0)."""
    known = [v for v in values if v is not None]
    return math.fsum(known) if known else None


def _row(plan_key: str, pack: str, group: list[dict[str, Any]]) -> SummaryRow:
    counted = [g for g in group if g["counts_against_model"]]
    errors = [g for g in group if g["status"] == "error" and not g.get("user_simulator_failure")]
    graded = [g for g in counted if g["passed"] is not None]
    passed = sum(1 for g in graded if g["passed"])
    per_task: dict[str, list[bool]] = defaultdict(list)
    for g in graded:
        per_task[g["task_id"]].append(bool(g["passed"]))
    hat = pass_hat_ks([(sum(r), len(r)) for r in per_task.values()])
    agent = [_agent_cost(g) for g in group]
    user = [_user_cost(g) for g in group]
    both = [g.get("cost_usd") if split_unknown(g) else a + u if a is not None and u is not None else None
            for g, a, u in zip(group, agent, user)]
    known_both = [b for b in both if b is not None]
    agent_tokens, user_tokens = _tokens(group, "usage"), _tokens(group, "user_usage")
    tokens = [g["total_tokens"] for g in group if g.get("total_tokens") is not None]
    calls = [g["n_calls"] for g in group if g.get("n_calls") is not None]
    latencies = [float(g["latency_s"]) for g in group if g.get("latency_s") is not None]
    retries: Counter[str] = Counter()
    for g in group:
        retries.update(g.get("retries") or {})
    rate = passed / len(graded) if graded else None
    interval = wilson_interval(passed, len(graded))
    ended = [g for g in group if g["status"] in ("completed", "failed", "error")]
    user_failed = sum(1 for g in ended if g.get("user_simulator_failure"))
    return SummaryRow(
        plan_key=plan_key, task_pack=pack, trials=len(group), counted=len(counted), passed=passed,
        failed=sum(1 for g in graded if g["passed"] is False and g["status"] != "error"),
        error=len(errors), aborted=sum(1 for g in group if g["status"] == "aborted"),
        graded=len(graded), pass_rate=_round(rate), user_failures=user_failed,
        user_failure_rate=_round(user_failed / len(ended)) if ended else None,
        pass_rate_ci95=(round(interval[0], 9), round(interval[1], 9)) if interval else None,
        pass_hat_k=hat[0] if hat else None, pass_hat_k_tasks=hat[1] if hat else None,
        mean_cost_usd=_round(math.fsum(known_both) / len(known_both)) if known_both else None,
        agent_cost=_cost_stat(agent, [_known_part(g, "cost_known_usd") for g in group]),
        user_cost=_cost_stat(user, [_known_part(g, "user_cost_known_usd") for g in group]),
        mean_tokens=_round(sum(tokens) / len(tokens)) if tokens else None,
        unknown_token_trials=len(group) - len(tokens),
        agent_tokens=agent_tokens, user_tokens=user_tokens,
        mean_agent_tokens=_mean_tokens(agent_tokens, group, "usage"),
        mean_user_tokens=_mean_tokens(user_tokens, group, "user_usage"),
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
    agent_total = _with_parts(_known_sum(agent), agent, [_known_part(g, "cost_known_usd") for g in all_lines])
    user_total = _with_parts(_known_sum(user), user, [_known_part(g, "user_cost_known_usd") for g in all_lines])
    # older lines' combined cost is known and spent: in the total, though in neither the agent's nor the user's part
    unsplit = _known_sum([g["cost_usd"] for g in all_lines if split_unknown(g) and g.get("cost_usd") is not None])
    unknown = sum(1 for g, a, u in zip(all_lines, agent, user)
                  if (a is None or u is None) and not (split_unknown(g) and g.get("cost_usd") is not None))
    # the judge's calls (a grader's --judge-plan): known spend, in the total though in neither part
    judge = math.fsum(float(g.get("judge_cost_usd") or 0.0) for g in all_lines)
    total: float | None = (agent_total or 0.0) + (user_total or 0.0) + (unsplit or 0.0) + judge + unfinished_cost_usd
    if unknown == len(all_lines) and unknown and not total:
        total = None  # every trial's cost is unknown and nothing else is known to be spent: not $0
    split = [split_unknown(g) for g in all_lines]
    return Summary(rows=rows, total_cost_usd=_round(total),
                   agent_cost_usd=_round(_part(agent_total, [a for a, old in zip(agent, split) if not old])),
                   user_cost_usd=_round(_part(user_total, [u for u, old in zip(user, split) if not old])),
                   unfinished_cost_usd=round(unfinished_cost_usd, 9), unknown_cost_trials=unknown,
                   trials=len(all_lines))


def _with_parts(total: float | None, values: list[float | None], parts: list[float]) -> float | None:
    """``total`` plus the known parts of the trials whose value is unknown."""
    spent = math.fsum(part for v, part in zip(values, parts) if v is None)
    return total + spent if total is not None else spent or None


def _part(total: float | None, values: list[float | None]) -> float | None:
    """A role's part of the total: its known sum; 0 when no trial of this capplan's records has it; null when
    every one is unknown (an older line's combined cost is in neither part)."""
    if total is not None:
        return total
    return None if any(v is None for v in values) else 0.0


def _cell(text: object) -> str:
    # a model key or pack name is the user's text: escapes, control characters and pipes are made harmless
    return md_cell(text)


def _usd(value: float | None, digits: int = 6) -> str:
    return "unknown" if value is None else f"{value:.{digits}f}"


def _rate(value: float | None) -> str:
    return f"{value:.1%}" if value is not None else "—"


#: the statistics columns of a summary row, as summary.md and ``trial report`` show them
ROW_HEADER = ["trials", "pass rate", "user-sim failures", "95 % CI", "pass^k", "passed / graded", "failed", "error", "aborted",
              "mean agent cost (USD)", "mean user cost (USD)", "unknown cost", "mean tokens", "mean turns",
              "latency p50 / p95 (s)", "termination reasons", "retries"]
ROW_ALIGN = "rrrrlrrrrrrrrrrll"


def row_cells(r: SummaryRow) -> list[str]:
    """A summary row's statistics as table cells (raw text: the table escapes them)."""
    interval = f"{r.pass_rate_ci95[0]:.1%}–{r.pass_rate_ci95[1]:.1%}" if r.pass_rate_ci95 else "—"
    hat = pass_hat_k_text(r.pass_hat_k, r.pass_hat_k_tasks)
    agent, user_cost = r.agent_cost, r.user_cost
    unknown = max(agent.unknown_trials if agent else 0, user_cost.unknown_trials if user_cost else 0)
    latency = ("—" if r.latency_p50_s is None or r.latency_p95_s is None
               else f"{r.latency_p50_s:.2f} / {r.latency_p95_s:.2f}")
    reasons = ", ".join(f"{k} {v}" for k, v in r.termination_reasons.items())
    # the loop's retry classes and the transport's (transport_rate_limit, transport_server_error, …), by name
    retries = ", ".join(f"{k} {v}" for k, v in r.retries.items()) or "—"
    user = "—" if r.user_failure_rate is None else f"{r.user_failures} ({r.user_failure_rate:.1%})"
    return [str(r.trials), _rate(r.pass_rate), user, interval, hat, f"{r.passed} / {r.graded}", str(r.failed),
            str(r.error), str(r.aborted), _usd(agent.mean_usd if agent else None),
            _usd(user_cost.mean_usd if user_cost else None), str(unknown), _mean_tokens_cell(r),
            f"{(r.mean_turns or 0):.1f}", latency, reasons, retries]


def lower_bound_usd(value: float | None, unknown: int, digits: int = 4) -> str:
    """A total over values of which ``unknown`` are unknown: "$X", "≥ $X (+ N unknown)", or "unknown"."""
    if value is None:
        return "unknown"
    if unknown:
        return f"≥ ${value:.{digits}f} (+ {unknown} unknown)"
    return f"${value:.{digits}f}"


def _mean_tokens_cell(r: SummaryRow) -> str:
    """The mean over the trials whose tokens are known, with how many were left out; never 0 for unknown."""
    if r.mean_tokens is None:
        return "unknown"
    return f"{r.mean_tokens:.0f}" + (f" ({r.unknown_token_trials} unknown)" if r.unknown_token_trials else "")


def render_markdown(summary: Summary) -> str:
    total = lower_bound_usd(summary.total_cost_usd, summary.unknown_cost_trials)
    if summary.unknown_cost_trials and summary.total_cost_usd is None:
        total += f" ({summary.unknown_cost_trials} trial(s) of unknown cost)"
    unknown_agent = sum(r.agent_cost.unknown_trials for r in summary.rows if r.agent_cost)
    unknown_user = sum(r.user_cost.unknown_trials for r in summary.rows if r.user_cost)
    agent = lower_bound_usd(summary.agent_cost_usd, unknown_agent)
    user = lower_bound_usd(summary.user_cost_usd, unknown_user)
    lines = [
        "# Trial summary",
        "",
        f"{summary.trials} finished trial(s), total cost {total}"
        + (f" (agent {agent}, user {user}"
           + (f", unfinished trials ${summary.unfinished_cost_usd:.4f}" if summary.unfinished_cost_usd else "")
           + ")" if summary.trials or summary.unfinished_cost_usd else "") + ".",
        "",
    ]
    lines += md_table(["model", "task pack", *ROW_HEADER],
                      [[r.plan_key, r.task_pack, *row_cells(r)] for r in summary.rows], align="ll" + ROW_ALIGN)
    lines += ["", "Aborted trials (rate limit, timeout, infrastructure, configuration) are excluded from the pass "
              "rate; harness errors stay in it as not passed. Costs and tokens leave out trials whose value is unknown "
              "(a call the provider never reported usage or cost for), counted apart; a total over them is a lower "
              "bound.", ""]
    lines += [PASS_RULE, ""]
    return "\n".join(lines)


def render_json(summary: Summary) -> str:
    return json.dumps(summary.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"
