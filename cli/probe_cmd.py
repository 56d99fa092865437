"""``capplan probe``: ask a plan's live route the questions its claims rest on, and write dated evidence."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import click

from capplan.cli.common import HTTP_URL, input_options
from capplan.cli.errors import CommandExit, ExitCode
from capplan.cli.plan_inputs import named_plans
from capplan.core import confined_write
from capplan.core.canonical import canonical_bytes
from capplan.core.diagnostics import InputError, did_you_mean
from capplan.core.errors import UserError
from capplan.executor.client import Client
from capplan.executor.plan import Plan
from capplan.probes.drift import drift
from capplan.probes.errors import ProbeError
from capplan.probes.evidence import ProbeRecord
from capplan.probes.families import (FAMILIES, NOT_ASKED, FamilyPlans, FamilyRecord, plan_families, run_families,
                                     without_params)
from capplan.probes.runner import ProbePlan, plan_probe, run_probe, unprobeable_reason
from capplan.probes.snippet import snippet_text

#: the file a folder of plans holds beside them, which is no plan


@click.command("probe")
@click.argument("plans", nargs=-1, type=click.Path(path_type=Path))
@click.option("--plan", "plan_options", multiple=True, type=click.Path(path_type=Path), metavar="PATH",
              help="A plan file or folder of plans (repeatable): the same as naming it as an argument, as "
                   "`trial run --plan` and `gateway check --plan` spell it.")
@click.option("--model", "models", multiple=True, metavar="KEY",
              help="Probe only the plan of this model key (repeatable).")
@click.option("--out", "out_dir", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Folder for <plan key>.probe.json and <plan key>.overlay.yaml (required unless --dry-run or --check).")
@click.option("--api-base", default=None, type=HTTP_URL, help="Send to this base URL instead of the binding's.")
@click.option("--max-requests", type=click.IntRange(min=1), default=None,
              help="Send at most N requests in all (default: every question).")
@click.option("--max-cost", type=click.FloatRange(min=0, min_open=True), default=None, metavar="USD",
              help="Stop before the request whose worst-case cost (plan price x its token bound) would pass USD.")
@click.option("--dry-run", is_flag=True, help="Print the planned requests and their worst-case cost; send nothing.")
@click.option("--check", is_flag=True, help="Compare today's answers with the plans' claims; exit 1 on drift.")
@click.option("--family", "families", multiple=True, type=click.Choice((*FAMILIES, "all")), metavar="NAME",
              help="Ask this family of questions (repeatable; default: params): params (parameter values, "
                   "the output cap's other name, tool schemas), carriers (the replay eval's reasoning carriers), cache (cache "
                   "markers and cached tokens), all.")
@input_options
def probe_cmd(plans: tuple[Path, ...], plan_options: tuple[Path, ...], models: tuple[str, ...], out_dir: Path | None, api_base: str | None,
              max_requests: int | None, max_cost: float | None, dry_run: bool, check: bool, families: tuple[str, ...],
              run_config: Path | None, overlays: tuple[Path, ...], data_dir: Path | None) -> None:
    """Ask each plan's live route whether it takes the values the plan sends or rules on.

    One small request per question (16 output tokens): temperature 0 and every temperature /
    top_p value the plan's param_value_rules name, each reasoning effort, tool_choice none / auto
    / required / named, parallel_tool_calls true / false, seed, stop, and response_format text /
    json_object / strict json_schema. Each is built by the plan's own request builder with only
    that parameter changed (its value rule bypassed) and sent once, as trials send: the plan's
    binding, keys from the environment, the gateway when LLM_PROXY_* is set. A refusal is never
    retried; a 429, 5xx, timeout or transport error is recorded as not measured. Also asked: the
    output cap under the name the plan does not send, and one tiny tool per JSON-Schema feature the
    plan's sanitiser keeps (plain and strict); every accepted answer's usage field names are counted
    against the fields the plan reads.

    Two more families of questions, asked with --family (or --family all). carriers: for a plan whose
    model returns reasoning, the replay eval's text step on the plan's route (a baseline and every
    carrier it knows, in the tool loop and across turns; 10 requests on chat, 6 on Responses):
    each carrier accepted, rejected, consumed, or required. cache: the plan's own request with a
    cacheable prefix (1024 tokens, 4096 with Anthropic markers), sent twice: markers accepted or
    refused, and whether the repeat's usage reports cached tokens. Both count in the budget.

    \b
    Plan files or folders of plans (with none, the catalogue --config / --presets-file / --data
    compile to, the bundled one by default):
      capplan probe golden/plans/gpt-5.json --out probes/
    What it would send and cost, sending nothing:
      capplan probe --dry-run
    Against a local server, within a budget:
      capplan probe plans/ --model gpt-5 --api-base http://127.0.0.1:8000/v1 --max-requests 5 --out probes/
    Has the route changed since the plan's evidence was taken?
      capplan probe --check golden/plans/gpt-5.json

    Then turn the answers into rules: give probes/gpt-5.overlay.yaml to `capplan compile
    --presets-file` (its probe_evidence: entry applies only to plans on the probed route: same
    provider key, protocol and model as sent), and `capplan explain gpt-5 param_value_rules` cites
    each measurement. `capplan lint` warns when the evidence grows old.

    \b
    --out gets <plan key>.probe.json (every question, its outcome, status, the provider's exact
    error text, request fingerprint, date, capplan version and the route's identity) and
    <plan key>.overlay.yaml (a probe_evidence: entry: each value's answer, whose refusals compile to
    param_value_rules rejects with evidence that says all that),
    and <plan key>.replay.overlay.yaml when a carrier verdict was measured (the reasoning_replay:
    block `capplan replay report --overlay` writes; give it to compile as one more --presets-file).
    Exit codes: 0 done (with --check: nothing drifted), 1 --check found drift, 2 bad input (a
    missing or corrupt plan, an unknown --model, a route that cannot be probed, a plan with no
    price under --max-cost, a missing key).
    """
    plans = (*plans, *plan_options)
    if not dry_run and not check and out_dir is None:
        raise ProbeError("--out is required to write the evidence (or give --dry-run or --check)",
                         location="capplan probe --out")
    if dry_run and check:
        raise ProbeError("--dry-run sends nothing, so there is nothing to --check", location="capplan probe --check")
    selected = _select(_plans(plans, run_config, overlays, data_dir), models, named=bool(plans))
    # the parameter questions by default: the carrier and cache families cost more requests each,
    # and a cache miss is one observation of a best-effort cache (docs/probe.md), so they are asked for
    families = FAMILIES if "all" in families else (families or ("params",))
    probes: list[tuple[Client, ProbePlan]] = []
    extra: dict[str, FamilyPlans] = {}
    for where, plan in selected:
        if unprobeable_reason(plan) is not None:
            click.echo(f"{plan.model.key}: not probed: {unprobeable_reason(plan)}", err=True)
            continue
        try:
            client = Client(plan, api_base=api_base)
            probe = plan_probe(client)
            extra[plan.model.key] = plan_families(client, probe, families)
            probes.append((client, probe if "params" in families else without_params(probe)))
        except UserError as exc:
            if plans or models:
                exc.location = exc.location or where
                raise
            # the whole catalogue: a plan this machine cannot build for (no endpoint set) is listed, not fatal
            click.echo(f"{plan.model.key}: not probed: {exc.message}", err=True)
    if max_cost is not None:
        unpriced = [probe.plan.model.key for _, probe in probes
                    if probe.worst_usd() is None or extra[probe.plan.model.key].worst_usd() is None]
        if unpriced:
            raise ProbeError(f"--max-cost cannot bound plan(s) {', '.join(unpriced)}: no price (or no output cap), "
                             "so a request's worst-case cost is unknown",
                             location="capplan probe --max-cost",
                             hint="give a pricing entry for the model, or drop --max-cost and use --max-requests")
    if dry_run:
        _print_dry_run(probes, extra)
        return
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
    date = datetime.datetime.now(datetime.UTC).date().isoformat()
    requests_left = max_requests
    cost_left = max_cost
    drifted = False
    for client, probe in probes:
        client.require_credentials()  # a missing key is refused before anything is sent
        record = run_probe(client, probe, date=date, max_requests=requests_left, max_cost=cost_left)
        if requests_left is not None:
            requests_left = max(requests_left - record.sent, 0)
        if cost_left is not None:
            cost_left = max(cost_left - record.reserved_usd, 0.0)
        found = run_families(client, extra[probe.plan.model.key], max_requests=requests_left, max_cost=cost_left)
        if requests_left is not None:
            requests_left = max(requests_left - found.sent, 0)
        if cost_left is not None:
            cost_left = max(cost_left - found.reserved_usd, 0.0)
        _summary(record, out_dir)
        for line in found.summary_lines():
            click.echo(line, err=True)
        if out_dir is not None:
            _write(out_dir, record, probe.plan, found)
        if check:
            report = drift(record) if "params" in families else None
            more, unmeasured = found.drift()
            for line in [*(report.drifted if report else ()), *more]:
                click.echo(line)
            for line in [*(report.unmeasured if report else ()), *unmeasured]:
                click.echo(f"not compared: {line}")
            drifted = drifted or bool(report and report.has_drift) or bool(more)
    if check:
        click.echo("drift found" if drifted else "no drift")
        if drifted:
            raise CommandExit(ExitCode.FINDINGS)


def _summary(record: ProbeRecord, out_dir: Path | None) -> None:
    counts = record.counts()
    line = (f"{record.plan_key}: {counts['accepted']} accepted, {counts['refused']} refused, "
            f"{counts['not measured']} not measured, {counts['skipped']} skipped ({record.route.text()})")
    click.echo(line, err=True)
    for result in record.results:
        if result.outcome.kind == "refused":
            click.echo(f"  {result.id}: refused, HTTP {result.outcome.status}: {result.outcome.detail}", err=True)
    if record.stopped:
        click.echo(f"  stopped: {record.stopped}", err=True)


def _write(out_dir: Path, record: ProbeRecord, plan: Plan, found: FamilyRecord) -> None:
    key = record.plan_key
    # the families' findings join the parameter questions' record under their own keys
    joined = {**json.loads(record.to_bytes()), **found.as_json()}
    files = [(f"{key}.probe.json", canonical_bytes(joined)),
             (f"{key}.overlay.yaml", snippet_text(record, plan.model.provider.split("/", 1)[0].lower()).encode("utf-8"))]
    if found.replay_overlay is not None:
        # its own file: the replay eval's writer makes it (what `capplan replay report --overlay` writes),
        # and an operator overlay takes each file as one more --presets-file
        files.append((f"{key}.replay.overlay.yaml", found.replay_overlay.encode("utf-8")))
    try:
        for name, data in files:
            confined_write.check_segment(name, "a probe output file name")
            confined_write.write_atomic(out_dir, [name], data, mode=0o644)
    except confined_write.ConfinedPathError as exc:
        raise InputError([exc.diagnostic()]) from None
    except ValueError as exc:  # a plan key that is no safe file name
        raise ProbeError(f"plan key {key!r} cannot name a file in {out_dir}: {exc}", location=str(out_dir)) from None
    click.echo(f"  wrote {', '.join(str(out_dir / name) for name, _ in files)}", err=True)


def _print_dry_run(probes: list[tuple[Client, ProbePlan]], extra: dict[str, FamilyPlans]) -> None:
    total = 0.0
    unknown: list[str] = []
    count = 0
    for _, probe in probes:
        route = probe.route
        click.echo(f"{probe.plan.model.key}: {route.text()}")
        for planned in probe.questions:
            if planned.skipped == NOT_ASKED:
                continue
            if planned.skipped is not None:
                click.echo(f"  {planned.question.id}: skipped: {planned.skipped}")
                continue
            count += 1
            cost = "unknown" if planned.worst_usd is None else f"${planned.worst_usd:.6f}"
            click.echo(f"  {planned.question.id}: {route.protocol} model {route.model} "
                       f"sha256:{planned.fingerprint} worst case {cost}")
        lines, more = extra[probe.plan.model.key].dry_run_lines(route.protocol, route.model)
        for line in lines:
            click.echo(line)
        count += more
        worst = probe.worst_usd()
        others = extra[probe.plan.model.key].worst_usd()
        worst = None if worst is None or others is None else worst + others
        if worst is None:
            unknown.append(probe.plan.model.key)
        else:
            total += worst
    tail = f" (plus plans with no price: {', '.join(unknown)})" if unknown else ""
    click.echo(f"{count} request(s) planned, worst-case cost ${total:.6f}{tail}; nothing was sent")


def _plans(paths: tuple[Path, ...], run_config: Path | None, overlays: tuple[Path, ...],
           data_dir: Path | None) -> list[tuple[str, Plan]]:
    """``(where it came from, plan)`` for the plans named, or the models the inputs compile to."""
    named = named_plans(paths, run_config, overlays, data_dir, command="capplan probe", code="PROBE",
                        usage_error=ProbeError)
    return [(where, plan) for where, _, plan in named]


def _select(found: list[tuple[str, Plan]], models: tuple[str, ...], *, named: bool) -> list[tuple[str, Plan]]:
    """The plans of ``models`` (all without); an unknown key, or a named plan no probe can ask, is an error."""
    keys = [plan.model.key for _, plan in found]
    for model in models:
        if model not in keys:
            hint = did_you_mean(model, keys)
            raise ProbeError(f"--model {model}: no plan of that model key among the plans given",
                             location="capplan probe --model", hint=hint or f"known: {', '.join(sorted(keys)[:12])}")
    chosen = [(where, plan) for where, plan in found if not models or plan.model.key in models]
    if named or models:
        for where, plan in chosen:
            reason = unprobeable_reason(plan)
            if reason is not None:
                raise ProbeError(f"plan {plan.model.key} cannot be probed: {reason}", location=where,
                                 hint="probe a plan whose route speaks an OpenAI-compatible protocol")
    return chosen
