"""``capplan trial run|report``: agent tasks run from compiled plans, and their summary."""

from __future__ import annotations

import dataclasses
import math
import os
from pathlib import Path
from typing import Any

import click

from capplan.cli.common import HTTP_URL
from capplan.cli.errors import CommandExit, ExitCode
from capplan.core.diagnostics import Diagnostic
from capplan.core.errors import UserError


class RunStoppedAtWrite(UserError):
    """A write inside the run folder was refused mid-run (the folder changed under the run)."""

    code = "RUN_STOPPED"

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message, location=f"{diagnostic.file}:{diagnostic.line}:{diagnostic.col}",
                         hint=diagnostic.hint)
        self.diagnostic = diagnostic

    def render(self) -> str:
        """The refused write, located, then what became of the run."""
        return (f"{self.diagnostic.render()}\ncapplan: the run stopped at this write; trials recorded before it are "
                "kept (fix the folder and run the same command again to resume)")


class _ErrorTolerance(click.ParamType):  # type: ignore[type-arg]  # generic since click 8.2; plain for older ones
    """``--fail-on-error``: an integer count, or a fraction in (0, 1) of the run's trials (inspect_ai's rule)."""

    name = "N|FRACTION"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            number = float(value)
        else:
            try:
                number = float(str(value).strip())
            except ValueError:
                self.fail("must be a count (0, 1, 2, …) or a fraction between 0 and 1", param, ctx)
        if not math.isfinite(number) or not (number.is_integer() and number >= 0) and not 0 < number < 1:
            self.fail("must be a count (0, 1, 2, …) or a fraction between 0 and 1", param, ctx)
        return number


@click.group("trial")
def trial_cmd() -> None:
    """Run agent tasks from compiled plans (run), compare runs (report), or show them as one HTML page (view)."""


@trial_cmd.command("run")
@click.argument("tasks", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--plan", "plans", multiple=True, required=True, type=click.Path(path_type=Path, dir_okay=False),
              help="Compiled plan of an agent model; repeat to compare models.")
@click.option("--user-plan", type=click.Path(path_type=Path, dir_okay=False),
              help="Plan of the user simulator's model (needed by tasks with an llm user).")
@click.option("--out", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="Run folder: a new or empty folder, or an earlier run's (re-running the same command resumes "
                   "it); a folder holding anything else is refused.")
@click.option("--trials", "n_trials", type=click.IntRange(min=1), default=1, show_default=True,
              help="Trials per plan × task.")
@click.option("--concurrency", type=click.IntRange(min=1), default=4, show_default=True,
              help="Trials running at once.")
@click.option("--max-turns", type=click.IntRange(min=1), default=None,
              help="Run-level cap on agent turns; ceilings every task's budget.")
@click.option("--max-cost", type=click.FloatRange(min=0), default=None,
              help="Spend bound in USD: no call is sent once this much is spent or reserved (each call reserves "
                   "its worst case); at most one call per running trial ends past it. Needs priced plans with "
                   "max_tokens; local backend only.")
@click.option("--backend", default="local", show_default=True,
              help="Where trials execute: local (threads in this process) or ray (a Ray cluster; "
                   "pip install 'capplan[ray]').")
@click.option("--address", default=None,
              help="--backend ray: the cluster to join: 'auto', 'ray://HOST:PORT' (Ray client) or the head's "
                   "'HOST:PORT'; without it a local cluster is started for the run.")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Worker processes running the trials, --concurrency split among them (one process's turns "
                   "share one interpreter lock: past a few hundred turns a second its core, not the provider, sets "
                   "the pace). local: default $CAPPLAN_WORKERS, else one per usable core; 1 runs the trials in this "
                   "process; never more than --concurrency or the trials to run. ray: one CPU each; default one "
                   "per cluster CPU, at most --concurrency.")
@click.option("--config", "run_config", type=click.Path(path_type=Path, dir_okay=False, exists=True), default=None,
              help="Run config (as for capplan compile) whose run policies apply: rate_limit_probe (absorb 429s "
                   "at a fixed interval; telemetry in the run folder's probe.json) on every backend; rate_limits "
                   "(requests per minute and calls in flight, per provider and per key, cluster-wide) on "
                   "--backend ray only; trials (tool_choice, parallel_tool_calls, tool_timeout_s for every task, "
                   "winning over each task's own).")
@click.option("--api-base", default=None, type=HTTP_URL, help="Send agent calls to this base URL instead of the binding's.")
@click.option("--user-api-base", default=None, type=HTTP_URL, help="Send user-simulator calls to this base URL.")
@click.option("--judge-plan", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Plan of the judge model a grader asks (τ²'s NL_ASSERTION): each judge call is recorded in the "
                   "trial's metrics as a judge call, with tokens and cost, and counts against --max-cost. A task "
                   "whose grader needs a judge is refused without it.")
@click.option("--judge-api-base", default=None, type=HTTP_URL, help="Send judge calls to this base URL.")
@click.option("--fail-on-error", "fail_on_error", type=_ErrorTolerance(), default="0", show_default=True,
              help="Trials that may end error (harness) or aborted (rate limit, timeout, infrastructure, "
                   "configuration) before the run exits 1: a count N, or a fraction of the run's trials in (0, 1).")
@click.option("--resample-user", "resample_user", type=click.IntRange(0, 10), default=0, show_default=True,
              metavar="N",
              help="Once every trial has run, run again (up to N times each) the trials whose user simulator broke "
                   "(left its scenario, revealed what it was told not to, looped, ended early, talked like the "
                   "assistant: the run line's user_simulator_failure), with a fresh user sample; each is a new "
                   "attempt that supersedes the broken one, and every attempt counts against --max-cost.")
@click.option("--retry-aborted", is_flag=True, default=False,
              help="On resume, run again the trials that ended aborted (rate limit, API timeout, infrastructure); "
                   "the new line supersedes the aborted one in the summary.")
def run_cmd(tasks: tuple[Path, ...], plans: tuple[Path, ...], user_plan: Path | None, out: Path, n_trials: int,
            concurrency: int, max_turns: int | None, max_cost: float | None, backend: str, address: str | None,
            workers: int | None, run_config: Path | None, api_base: str | None, user_api_base: str | None,
            retry_aborted: bool, fail_on_error: float, judge_plan: Path | None = None,
            judge_api_base: str | None = None, resample_user: int = 0) -> None:
    """Run every TASK file against every --plan, --trials times each, into --out.

    A TASK that is a folder stands for every *.yaml task file in it and in the folders below
    it (hidden folders left out), in order of their path within the folder; a YAML file there
    that is clearly not a task file (no environment and user keys, e.g. a run config) is
    skipped with a note, and a folder with no task file is an error.

    This runs the tasks' code: each task's environment and grader modules are imported (from
    their files in the task's folder, else as modules of the distributions the task file
    declares under requires:; never the standard library or anything else on sys.path) and the
    environment is constructed, once per trial (never while the tasks are checked); run only
    task files you trust. (capplan lint checks task files without running anything.)

    One writer per run folder: while this runs it holds OUT/writer.lock; a second run of the
    same folder exits 2 naming this one's pid.

    Every task file is checked against its environment before any call is made. Progress
    (done / running / failed, spend so far) is shown on stderr. The first Ctrl-C stops
    starting trials and lets running ones end at their next turn; they are marked
    interrupted and rerun when the same command is run again (finished trials are skipped).
    Trials that ended aborted (rate limit, API timeout, infrastructure: they do not count
    against the model) are finished too; add --retry-aborted to the re-run to run them again.
    runs.jsonl stays append-only: the new line supersedes the aborted one, and the summary
    and report read the latest line per trial, so no trial is counted twice.

    \b
      capplan compile --model mock-echo --out plans/ --keep-others
      capplan trial run examples/trials/inventory_desk --plan plans/mock-echo.json \\
          --user-plan plans/mock-echo.json --out runs/demo --trials 2
      capplan trial report runs/demo
      capplan trial run examples/trials/inventory_desk --plan plans/mock-echo.json \\
          --user-plan plans/mock-echo.json --out runs/demo --trials 2 --retry-aborted   # aborted trials again

    The same run on a Ray cluster (the driver writes the same folder; rate limits from a run config):

    \b
      capplan trial run tasks/ --plan plans/kimi-k3.json --out runs/big --trials 8 \\
          --backend ray --address auto --workers 16 --concurrency 512 --config run.yaml

    Probe mode (the run config's rate_limit_probe block, enabled: true) makes agent and
    user-simulator calls absorb 429s at a fixed, jittered interval instead of aborting, and
    writes probe.json: successes and 429 retries per role and model, summed over trials,
    per telemetry window:

    \b
      capplan trial run tasks/ --plan plans/kimi-k3.json --out runs/probe --config run.yaml

    Writes runs.jsonl (one line per finished trial), trials/<model>/<task>/<i>/trajectory.yaml
    and metrics.yaml, summary.md and summary.json (and probe.json in probe mode).

    Exit codes: 0 every trial finished with an outcome the model is answerable for, 1 stopped by
    --max-cost before all started, or some trials ended error or aborted (beyond --fail-on-error), or by a
    configuration error (a key, gateway key, endpoint or model the provider refused: the run stops
    at the first, the remaining trials recorded aborted),
    2 input error (an unset credential of any agent or user plan included, checked before any trial starts),
    130 interrupted (re-run to resume).
    """
    from capplan.trials.backends import BACKENDS, load_backend
    from capplan.trials.driver import RunRequest, build_run, drive
    from capplan.trials.usage_problem import UsageProblem
    from capplan.trials.run_folder.confined import ConfinedPathError
    from capplan.trials.report.progress import Progress
    from capplan.trials.run_folder.folder import RunFolder
    from capplan.trials.run_folder.run_identity import redacted_command

    from capplan.cli.task_paths import expand_task_paths

    tasks = expand_task_paths(tasks, _note)
    if backend not in BACKENDS:
        from capplan.core.diagnostics import did_you_mean

        hint = did_you_mean(backend, BACKENDS)
        raise UsageProblem(f"unknown --backend {backend!r}" + (f"; {hint}" if hint else ""))
    request = RunRequest(tasks=tasks, plans=plans, out=out, user_plan=user_plan, trials=n_trials,
                         concurrency=concurrency, max_turns=max_turns, max_cost=max_cost, api_base=api_base,
                         user_api_base=user_api_base, run_config=run_config, judge_plan=judge_plan,
                         judge_api_base=judge_api_base)
    try:
        config = _run_config(run_config, backend)
        if config is not None:
            request = dataclasses.replace(request, rate_limit_probe=config.model.rate_limit_probe,
                                          trial_choices=config.model.trials.model_dump(mode="json", exclude_none=True))
        specs, settings = build_run(request)
        # the folder is checked before a backend starts or a key is looked at: a folder of foreign
        # files, a damaged runs.jsonl or a planted link is refused with nothing written
        folder = RunFolder(out, notify=_note)
        folder.check(specs, settings=settings)  # a resume that changes the experiment is refused here
        options = _backend_options(backend, address, workers, config, specs)
        _refuse_unbounded(plans, user_plan, max_cost, backend, judge_plan)
        _require_credentials(request)
        runner = load_backend(backend, **options)
        outcome = drive(specs, folder, runner, concurrency=concurrency, max_cost=max_cost,
                        progress=Progress(), retry_aborted=retry_aborted, rate_limit_probe=request.rate_limit_probe,
                        settings=settings, command=redacted_command(), resample_user=resample_user)
    except ConfinedPathError as exc:  # refused at a write during the run (the folder changed under it)
        raise RunStoppedAtWrite(exc.diagnostic()) from None
    stats = getattr(runner, "stats", None)
    for line in stats.report() if stats is not None else []:
        click.echo(line, err=True)
    click.echo(f"run folder: {out}  (summary: {out / 'summary.md'})", err=True)
    if not outcome.interrupted and not outcome.not_started and outcome.configuration_error is None:
        from capplan.cli.common import next_hint

        next_hint(f"capplan trial report {out}    # pass rate, cost and tokens per model and task pack")
    if outcome.configuration_error is not None:
        click.echo(f"capplan trial run: error[CONFIGURATION]: run stopped: {outcome.configuration_error}; the remaining "
                   "trials are recorded aborted (fix it, then rerun with --retry-aborted)", err=True)
        raise CommandExit(ExitCode.FINDINGS)
    if outcome.budget_stopped:
        click.echo(f"budget stop: {_spent(folder, outcome.spent_usd)} of --max-cost ${max_cost}; "
                   f"{len(outcome.not_started)} trial(s) not started, {len(outcome.interrupted)} stopped before "
                   "their next call (they rerun when the same command runs again)", err=True)
        raise CommandExit(ExitCode.FINDINGS)
    if outcome.interrupted or outcome.not_started:
        click.echo(f"interrupted: {len(outcome.interrupted) + len(outcome.not_started)} trial(s) not finished; "
                   "run the same command again to resume", err=True)
        raise CommandExit(ExitCode.INTERRUPTED)  # Ctrl-C: the shell convention for "ended by SIGINT"
    status = _outcome_status(folder, specs, fail_on_error)
    if status is not ExitCode.OK:
        raise CommandExit(status)


def _spent(folder: Any, known_usd: float) -> str:
    """What the budget counted: every known dollar, a lower bound when some trial's cost is unknown (never $0 for it)."""
    from capplan.trials.run_folder.summary import summarize

    unknown = summarize(list(folder.finished().values())).unknown_cost_trials + folder.interrupted_unknown_trials()
    if not unknown:
        return f"${known_usd:.4f} spent"
    return f"≥ ${known_usd:.4f} spent (+ {unknown} trial(s) of unknown cost)"


def tolerated(bad: int, total: int, tolerance: float) -> bool:
    """Whether ``bad`` of ``total`` trials is within ``--fail-on-error``: at most N, or at most that fraction."""
    if bad == 0:
        return True
    if 0 < tolerance < 1:
        return bad / total <= tolerance
    return bad <= tolerance


def _outcome_status(folder: Any, specs: list[Any], tolerance: float) -> ExitCode:
    """0 when every trial of the run has an outcome the model is answerable for; 1 past the tolerance."""
    finished = folder.finished()
    lines = [finished[str(s.key)] for s in specs if str(s.key) in finished]
    bad = {status: sum(1 for line in lines if line["status"] == status) for status in ("error", "aborted")}
    if not bad["error"] and not bad["aborted"]:
        return ExitCode.OK
    told = " and ".join(f"{n} {status}" for status, n in bad.items() if n)
    if not any(line["status"] in ("completed", "failed") for line in lines):
        # a tolerance is for some trials going wrong, not for a run that measured nothing (an unreachable endpoint)
        click.echo(f"capplan trial run: {told} trial(s) of {len(lines)} and none completed or failed: nothing could "
                   "be graded (exit 1 whatever --fail-on-error says)", err=True)
        return ExitCode.FINDINGS
    if tolerated(bad["error"] + bad["aborted"], len(lines), tolerance):
        click.echo(f"note: {told} trial(s) of {len(lines)}, within --fail-on-error", err=True)
        return ExitCode.OK
    click.echo(f"capplan trial run: {told} trial(s) of {len(lines)} have no outcome the model is answerable for "
               "(exit 1; --fail-on-error N|FRACTION tolerates some)", err=True)
    return ExitCode.FINDINGS


def _refuse_unbounded(plans: tuple[Path, ...], user_plan: Path | None, max_cost: float | None, backend: str,
                      judge_plan: Path | None = None) -> None:
    """--max-cost bounds spend only where every call has a worst case (a price and an output cap) and the
    driver sees every send as it happens (the local backend): anything else is refused before anything runs."""
    if max_cost is None:
        return
    from capplan.core.diagnostics import InputError
    from capplan.executor.cost_bound import unbounded_reason
    from capplan.executor.plan import Plan
    from capplan.trials.usage_problem import UsageProblem

    if backend != "local":
        raise UsageProblem(f"--max-cost is enforced on the local backend only: on --backend {backend} a running "
                           "trial's sends reach the driver late, so the budget could not stop them; drop --max-cost, "
                           "or run with --backend local")
    found = []
    for path in dict.fromkeys([*plans, *[p for p in (user_plan, judge_plan) if p is not None]]):
        plan = Plan.load(path)
        reason = unbounded_reason(plan)
        if reason is not None:
            found.append(Diagnostic(
                str(path), 1, 1, "max-cost-unbounded",
                f"--max-cost cannot bound plan {plan.model.key!r}: {reason}",
                hint=("add the model's prices (USD per 1M tokens, input and output) to pricing.json under "
                      f"{plan.model.model_id!r} and recompile the plan (capplan compile --data FOLDER)"
                      if plan.pricing is None else
                      f"set max_tokens for model {plan.model.key!r} in the run config and recompile the plan "
                      "(capplan compile --config RUN.yaml)") + ", or run without --max-cost"))
    if found:
        raise InputError(found)


def _note(text: str) -> None:
    """A warning about the run folder (a torn line set aside, a repeated line counted once), on stderr."""
    click.echo(text, err=True)


def _require_credentials(request: Any) -> None:
    """Refuse the run, before any trial starts, when a credential any agent or user plan needs is unset."""
    from capplan.executor.client import Client
    from capplan.executor.preflight import check_credentials

    clients = [(Client.from_plan_file(plan, api_base=request.api_base), request.api_base) for plan in request.plans]
    if request.user_plan is not None:
        clients.append((Client.from_plan_file(request.user_plan, api_base=request.user_api_base), request.user_api_base))
    if request.judge_plan is not None:
        clients.append((Client.from_plan_file(request.judge_plan, api_base=request.judge_api_base),
                        request.judge_api_base))
    check_credentials(clients)
    for client, _ in clients:
        client.require_credentials()  # the run extra, and anything the client itself refuses


def _run_config(path: Path | None, backend: str) -> Any:
    """``--config``'s run config (``Loaded[RunConfig]``), or None; its rate_limits need --backend ray."""
    if path is None:
        return None
    from capplan.cli.trial_limits import load_run_config
    from capplan.trials.usage_problem import UsageProblem

    loaded = load_run_config(path)
    limits = loaded.model.rate_limits
    if backend != "ray" and (limits.providers or limits.keys):
        # a limit the local backend would not enforce must not look enforced
        raise UsageProblem(f"{path}: rate_limits apply only to --backend ray (rate_limit_probe works on every backend)")
    return loaded


def _backend_options(backend: str, address: str | None, workers: int | None, config: Any,
                     specs: list[Any]) -> dict[str, Any]:
    """The Ray backend's options; on any other backend they are a usage error, never ignored."""
    from capplan.trials.usage_problem import UsageProblem

    if backend != "ray":
        if address is not None:
            raise UsageProblem("--address applies only to --backend ray")
        return {"workers": workers if workers is not None else _workers_from_environment()}
    from capplan.cli.trial_limits import load_rate_limits
    from capplan.executor.plan import Plan
    from capplan.trials.backends.cluster.session import check_address

    check_address(address)

    limits = None
    if config is not None:
        plans = {s.plan_fingerprint: s.plan_json for s in specs}
        limits = load_rate_limits(config, [Plan.model_validate_json(text) for text in plans.values()])
    return {"address": address, "workers": workers, "limits": limits}


#: the local backend's default worker count when --workers is not given (unset: one per usable core)
WORKERS_VARIABLE = "CAPPLAN_WORKERS"


def _workers_from_environment() -> int | None:
    """``$CAPPLAN_WORKERS`` as a worker count (None when unset: the backend takes one per usable core)."""
    from capplan.trials.usage_problem import UsageProblem

    text = os.environ.get(WORKERS_VARIABLE)
    if text is None or not text.strip():
        return None
    try:
        count = int(text.strip())
    except ValueError:
        count = 0
    if count < 1:
        shown = text if len(text) <= 40 else text[:40] + "…"
        raise UsageProblem(f"${WORKERS_VARIABLE}={shown!r} is not a worker count; set it to a whole number >= 1 "
                           "(1 runs the trials in this process), or unset it for one per usable core")
    return count


# ``capplan trial report`` and ``capplan trial view``: runs read back, compared and shown, a module of their own
from capplan.cli.trial_results_cmd import report_cmd, view_cmd  # noqa: E402

trial_cmd.add_command(report_cmd)
trial_cmd.add_command(view_cmd)


# ``capplan trial import``: benchmark importers, a module of their own
from capplan.cli.trial_import_cmd import import_cmd  # noqa: E402

trial_cmd.add_command(import_cmd)


# ``capplan trial export``: runs written for inspect_ai's viewer or as JSON Lines, a module of its own
from capplan.cli.trial_export_cmd import export_cmd  # noqa: E402

trial_cmd.add_command(export_cmd)
