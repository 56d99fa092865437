"""``capplan explain``: where each resolved field of a model's plan came from."""

from __future__ import annotations

from pathlib import Path

import click

from capplan.cli.common import input_options, project_note
from capplan.compiler.compile import compile_paths
from capplan.compiler.explain import explain, unknown_field_hint
from capplan.compiler.provenance_lines import LineIndex


@click.command("explain")
@click.argument("model")
@click.argument("field", required=False)
@input_options
def explain_cmd(model: str, field: str | None, run_config: Path | None, overlays: tuple[Path, ...],
                data_dir: Path | None) -> None:
    """Show each resolved field of MODEL's plan with the layer, file and line that set it.

    MODEL is a catalogue / run-config key or PROVIDER/NAME. FIELD narrows the output to one
    dotted field or subtree of the plan.

    \b
      capplan explain kimi-k3
      capplan explain openrouter/anthropic/claude-opus-4.7 policies.params_policy
      capplan explain gemini-3.1-pro-preview param_value_rules --presets-file examples/overlays/ops-overlay.yaml
    """
    result = compile_paths(data_dir=data_dir, run_config=run_config, overlays=list(overlays), model=model)
    note = project_note()
    if note is not None:  # which defaults the inputs above came from
        click.echo(f"# {note}")
    for key, plan in result.plans.items():
        click.echo(f"# {key}: {plan.model.model_id} (wire {plan.model.wire_model}), "
                   f"preset {plan.effective_preset}, fingerprint {plan.fingerprint[:12]}")
        rows = explain(plan, field, LineIndex(result.sources))
        if not rows:
            raise click.BadParameter(f"the plan has no field {field!r}; {unknown_field_hint(plan, field or '')}",
                                     param_hint="FIELD")
        for row in rows:
            click.echo(row.render())
