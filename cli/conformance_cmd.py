"""``capplan conformance``: hold compiled plans to the rules providers enforce, offline."""

from __future__ import annotations

from pathlib import Path

import click

from capplan.cli.common import input_options
from capplan.cli.errors import CommandExit, ExitCode
from capplan.cli.plan_inputs import named_plans
from capplan.conformance.corpus import Corpus, load_corpus
from capplan.conformance.emulators import checks_by_protocol
from capplan.conformance.report import FORMATS, RULE_FORMATS, render, render_rules
from capplan.conformance.runner import PlanInput, run_conformance, workers_default
from capplan.core.errors import UserError

#: the file a folder of plans holds beside them, which is no plan


class ConformanceUsageError(UserError):
    """A combination of options the command does not take."""

    code = "CONFORMANCE_USAGE"


@click.command("conformance")
@click.argument("plans", nargs=-1, type=click.Path(path_type=Path))
@click.option("--rules", "rule_patterns", multiple=True, metavar="ID|GLOB",
              help="Hold the plans to these rules only (an id or a glob on ids; repeatable).")
@click.option("--corpus", "corpus_paths", multiple=True, type=click.Path(path_type=Path), metavar="FILE|DIR",
              help="Rules file, or folder of *.yaml rules files, replacing the bundled corpus (repeatable).")
@input_options
@click.option("--format", "fmt", type=click.Choice(sorted({*FORMATS, *RULE_FORMATS})), default="text",
              show_default=True, help="Output format: text | json | github; with --list-rules: text | json | markdown.")
@click.option("--list-rules", is_flag=True, help="Print the rules (after --corpus and --rules) and run nothing.")
def conformance_cmd(plans: tuple[Path, ...], rule_patterns: tuple[str, ...], corpus_paths: tuple[Path, ...],
                    run_config: Path | None, overlays: tuple[Path, ...], data_dir: Path | None, fmt: str,
                    list_rules: bool) -> None:
    """Hold compiled plans to the rules providers enforce, offline, and print a plan x rule matrix.

    Every plan runs every scenario that applies to it (tool loops, parallel calls, two user
    turns, thinking on and off, a model and a route switch, a context handoff, cache markers,
    rich tool schemas, temperature 0, every effort level, every tool_choice) through capplan's
    real executor, transport and trial loop, against a strict loopback emulator of its route's
    protocol that answers a broken rule with the provider's exact status and error text.

    With no PLANS, the models that --config / --presets-file / --data compile to (the bundled
    catalogue when none is given) are compiled in memory and held.

    \b
    Plan files or folders of plans:
      capplan conformance golden/plans/gpt-5.json golden/plans/o3.json
    A few rules, as GitHub annotations (the CI step runs it on all of them):
      capplan conformance golden/plans/gpt-5.json --rules 'openai.*' --format github
    Every rule with its source (docs/conformance.md is made with it):
      capplan conformance --list-rules --format markdown

    \b
    Cells: + accepted (the rule applied and some request was held to it, none broke it),
    X rejected (the provider's status and text, the scenario and the request's index in it),
    . not applicable (another protocol, route or model, or no scenario sent a request it holds;
    --format json says why). A value capplan refuses before sending is noted, never sent.
    No credential is read: each client gets a dummy key, and sends only to 127.0.0.1.
    Exit codes: 0 every cell accepted or not applicable, 1 a rejection (or a scenario that failed
    outside any rule), 2 bad input (unknown rule id, a corrupt rules file or plan, a plan whose
    protocol no emulator speaks).
    """
    if list_rules and fmt not in RULE_FORMATS:
        raise ConformanceUsageError(f"--format {fmt} does not list rules; use one of: {', '.join(RULE_FORMATS)}",
                                    location="capplan conformance --list-rules")
    if not list_rules and fmt not in FORMATS:
        raise ConformanceUsageError(f"--format {fmt} is for --list-rules; a run prints {', '.join(FORMATS)}",
                                    location="capplan conformance --format")
    corpus = load_corpus(list(corpus_paths), checks=checks_by_protocol())
    if rule_patterns:
        corpus = corpus.select(list(rule_patterns))
    if list_rules:
        click.echo(render_rules(corpus, fmt), nl=False)
        return
    inputs = _plans(plans, run_config, overlays, data_dir)
    matrix = run_conformance(inputs, corpus, workers=workers_default())
    click.echo(render(matrix, fmt), nl=False)
    if matrix.exit_code:
        raise CommandExit(ExitCode.FINDINGS)


def _plans(paths: tuple[Path, ...], run_config: Path | None, overlays: tuple[Path, ...],
           data_dir: Path | None) -> list[PlanInput]:
    """The plans named, or the models the inputs compile to (the bundled catalogue when none)."""
    named = named_plans(paths, run_config, overlays, data_dir, command="capplan conformance", code="CONFORMANCE",
                        usage_error=ConformanceUsageError)
    out: list[PlanInput] = []
    seen: dict[str, Path] = {}
    for where, file, plan in named:
        key = plan.model.key
        if file is not None:
            if key in seen and seen[key] != file:
                key = f"{key} ({file})"  # two plans of one model from two places stay two rows
            seen.setdefault(plan.model.key, file)
        out.append(PlanInput(key, plan, where))
    return out


def bundled_corpus() -> Corpus:
    """The bundled corpus, checked against the shipped emulators' predicates."""
    return load_corpus(checks=checks_by_protocol())
