"""``capplan gateway check``: where each plan's calls would go through the configured gateway, and why."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from capplan.cli.common import format_option
from capplan.cli.errors import CommandExit, ExitCode
from capplan.core.errors import UserError

_EPILOG = """\b
Exit codes: 0 the gateway answered with its catalog and every plan routes through it, 1 the
catalog is unreadable (no answer in time, not JSON, empty, a redirect to another origin) or the
gateway refused the key (401/403), or a plan would leave the gateway (direct to its provider), or
the gateway serves it under several names with no LLM_PROXY_PREFERRED_ROUTE to pick one, 2 input
error (unreadable or tampered plan, malformed or missing LLM_PROXY_* setting or .env file).
"""


@click.group("gateway")
def gateway_cmd() -> None:
    """Inspect routing through the LLM gateway configured by the LLM_PROXY_* variables."""


@gateway_cmd.command("check", epilog=_EPILOG)
@click.option("--plan", "plans", multiple=True, required=True, type=click.Path(path_type=Path, exists=False),
              help="Plan file, or folder of plan files; repeatable.")
@format_option("text", "json")
def check_cmd(plans: tuple[Path, ...], fmt: str) -> None:
    """For each plan, print the route its calls take through the gateway and why.

    The gateway is configured as for a run: LLM_PROXY_BASE_URL and its companions, from the
    environment or a .env file in the working directory. The gateway's catalog
    (GET {base}/models) is read once.

    \b
      export LLM_PROXY_BASE_URL=https://gateway.example.com LLM_PROXY_API_KEY=...
      capplan compile --out plans/
      capplan gateway check --plan plans/
      capplan gateway check --plan plans/gpt-5.json --plan plans/kimi-k3.json --format json
    """
    from capplan.executor.gateway.catalog import read_gateway_catalog
    from capplan.executor.gateway.config import BASE_URL, GatewayConfigError, resolve_gateway_config
    from capplan.executor.gateway.route import GatewayRouteAmbiguous
    from capplan.executor.gateway.transport import decide_route
    from capplan.executor.mock_provider import is_mock
    from capplan.executor.plan import Plan

    # a malformed setting or plan is a located UserError, printed by capplan.cli.errors (exit 2)
    config = resolve_gateway_config()
    if config is None:
        raise GatewayConfigError(f"{BASE_URL} is not set, so no call goes through a gateway; "
                                 "set it (in the environment or .env) to the gateway's base URL")
    loaded = [(path, Plan.load(path)) for path in _plan_files(plans)]
    # read once, uncached, after every plan loaded (a bad plan fails without waiting on the
    # network) and whatever the plans are: the check answers whether the gateway serves a
    # catalog at all, which a mock plan's route never asks
    catalog = read_gateway_catalog(config)
    rows: list[dict[str, Any]] = []
    for path, plan in loaded:
        try:
            decision = decide_route(plan, config, lambda _config: catalog.served)
            offline = is_mock(plan.model.provider)  # answers in-process: there is no spend to leave the gateway
            reason = decision.reason + ("; the mock provider never reaches a wire" if offline else "")
            rows.append({"plan": str(path), "model": plan.model.key, "model_id": plan.model.model_id,
                         "kind": decision.kind, "route": decision.route, "reason": reason,
                         "ok": decision.via_gateway or offline})
        except GatewayRouteAmbiguous as exc:
            rows.append({"plan": str(path), "model": plan.model.key, "model_id": plan.model.model_id,
                         "kind": "ambiguous", "route": None, "reason": str(exc), "ok": False})
        except UserError as exc:  # a plan the route cannot be decided for: located at that plan
            exc.location = exc.location or str(path)
            raise
    served = catalog.served is not None
    summary = {"ok": served, "routes": len(catalog.served or ()), "problem": catalog.problem or None,
               "refused": catalog.refused}
    if fmt == "json":
        sys.stdout.write(json.dumps({"gateway": config.base_url, "catalog": summary, "plans": rows},
                                    indent=2, sort_keys=True) + "\n")
    else:
        click.echo(f"gateway: {config.base_url}")
        click.echo(f"{'ok  ' if served else 'FAIL'} catalog: "
                   + (f"{summary['routes']} route(s)" if served else catalog.problem))
        for row in rows:
            route = f" -> {row['route']}" if row["route"] else ""
            click.echo(f"{'ok  ' if row['ok'] else 'FAIL'} {row['model']}: {row['kind']}{route}: {row['reason']}")
    if not served:
        click.echo(f"capplan gateway check: error[GATEWAY_CATALOG]: {config.base_url}/models: "
                   f"{'the key was refused' if catalog.refused else 'the catalog is unreadable'}: {catalog.problem}",
                   err=True)
    if not (served and all(r["ok"] for r in rows)):
        raise CommandExit(ExitCode.FINDINGS)


def _plan_files(paths: tuple[Path, ...]) -> list[Path]:
    from capplan.executor.plan import PlanLoadError

    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            from capplan.compiler.manifest import MANIFEST_FILE

            found = sorted(p for p in path.glob("*.json") if p.name != MANIFEST_FILE)
            if not found:
                raise PlanLoadError("no plan files (*.json) in this folder", location=str(path))
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise PlanLoadError("no such plan file or folder", location=str(path))
    return files
