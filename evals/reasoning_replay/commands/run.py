"""``run``: plan the cells, skip the finished ones, measure the rest within the budget."""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from capplan.evals.reasoning_replay import redact
from capplan.evals.reasoning_replay.budget import Budget
from capplan.evals.reasoning_replay.errors import MissingCredential, UsageError
from capplan.evals.reasoning_replay.fixture import ALL_POSITIONS, Session
from capplan.evals.reasoning_replay.outcome import CellOutcome
from capplan.evals.reasoning_replay.progress import Progress
from capplan.evals.reasoning_replay.provider.catalog import fetch, portal_cap, portal_models
from capplan.evals.reasoning_replay.provider.client import Client
from capplan.evals.reasoning_replay.provider.credentials import KeySource, key_source
from capplan.evals.reasoning_replay.provider.prices_source import price_list
from capplan.evals.reasoning_replay.provider.ratelimit import limiter_for
from capplan.evals.reasoning_replay.routes import Route, resolve_route
from capplan.evals.reasoning_replay.run.context import Options, RunContext
from capplan.evals.reasoning_replay.run.scheduler import Cell, plan, record_state, run_cells
from capplan.evals.reasoning_replay.store.outdir import OutDir
from capplan.evals.reasoning_replay.wire import wire_for
from capplan.evals.reasoning_replay.wire.carriers import check_variants
from capplan.evals.reasoning_replay.wire.knobs import Knobs

STEPS = ("text", "opaque")


def run_command(args: argparse.Namespace) -> int:
    """Exit 0 when every planned cell is finished, 1 when some are left for a rerun."""
    route = resolve_route(args.route, kind=args.kind, base_url=args.base_url,
                          key_env=args.key_env, rps=args.rps, effort_style=args.effort_param)
    options = _options(args, route)
    out = OutDir(Path(args.out))  # checked, and its writer lock held until the run ends
    try:
        return _run(args, route, options, out)
    finally:
        out.close()


def _run(args: argparse.Namespace, route: Route, options: Options, out: OutDir) -> int:
    if out.inside_repo():
        warn(f"{out.path} is inside the repository; keep result folders outside it")
    session, problems = out.session(args.seed)
    keys = key_source(route)
    models, catalog = _models(args, route, keys)
    cells = plan(route.name, models, options.steps, options.positions)
    states, more = out.cell_states()
    run_id = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
    budget = Budget(out.costs, args.budget)
    ctx = _context(args, route, options, out, session, keys, budget, catalog, run_id)
    for problem in dict.fromkeys(problems + more + budget.problems + ctx.problems):
        warn(problem)
    out.runs.append(_run_record(run_id, route, args, models, session, options))
    todo = [c for c in cells if not states.get(c.key, {}).get("final")]
    progress = Progress(len(cells), len(cells) - len(todo), budget, quiet=args.quiet)
    progress.start()
    outcomes: dict[str, CellOutcome] = {}
    if _preflight(ctx, keys, todo):
        outcomes = run_cells(ctx, todo, args.workers, progress)
    left = [c.key for c in todo if not (c.key in outcomes and outcomes[c.key].final)]
    out.runs.append({"t": round(time.time(), 3), "run": run_id, "event": "end",
                     "spent": round(budget.spent, 6), "cells": len(cells), "left": len(left),
                     "stop": ctx.stop_reason})
    return _finish(ctx, cells, left, budget, out)


def warn(message: str) -> None:
    """One warning line on stderr."""
    print(f"warning: {message}", file=sys.stderr)


def _options(args: argparse.Namespace, route: Route) -> Options:
    steps = _split(args.steps)
    positions = _split(args.positions)
    for name, values, valid in (("--steps", steps, STEPS), ("--positions", positions, ALL_POSITIONS)):
        bad = [v for v in values if v not in valid]
        if bad or not values:
            raise UsageError(f"{name} {','.join(bad) or '(empty)'} not valid; choose from {', '.join(valid)}")
    want_direct = frozenset(_split(args.want_direct))
    if want_direct and not route.lanes:
        raise UsageError(f"--want-direct only applies to routes with lanes (nous); {route.name} has one lane")
    for name in ("lane_attempts", "max_tokens", "turn1_max_tokens", "workers"):
        if getattr(args, name) < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be at least 1")
    if args.budget < 0 or args.retries < 0:
        raise UsageError("--budget and --retries cannot be negative")
    return Options(variants=check_variants(route.kind, _split(args.variants)),
                   positions=tuple(positions), steps=tuple(steps), want_direct=want_direct,
                   lane_attempts=args.lane_attempts, max_tokens=args.max_tokens,
                   turn1_max_tokens=args.turn1_max_tokens, probe=args.probe,
                   turn1_tool_choice=args.turn1_tool_choice)


def _context(args: argparse.Namespace, route: Route, options: Options, out: OutDir,
             session: Session, keys: KeySource, budget: Budget, catalog: list[dict[str, Any]],
             run_id: str) -> RunContext:
    saved, problems = out.saved_knobs()
    client = Client(route=route, wire=wire_for(route.kind), keys=keys, budget=budget,
                    limiter=limiter_for(route.name, route.rps), out=out,
                    prices=price_list(args, route, keys, catalog), canary=session.canary,
                    run_id=run_id, retries=args.retries, timeout=args.timeout)
    return RunContext(route=route, client=client, session=session, options=options,
                      saved_knobs={m: Knobs.from_record(k) for (r, m), k in saved.items()
                                   if r == route.name},
                      problems=problems)


def _models(args: argparse.Namespace, route: Route, keys: KeySource
            ) -> tuple[list[str], list[dict[str, Any]]]:
    spec = args.models.strip()
    catalog: list[dict[str, Any]] = []
    if spec.startswith("portal-"):
        if not route.lanes:
            raise UsageError(f"--models {spec} selects from the Portal catalogue; use it with --route nous")
        cap = portal_cap(spec)
        catalog = fetch(route, keys, args.timeout)
        models = portal_models(cap, catalog)
    else:
        models = _split(spec)
    excluded = set(_split(args.exclude))
    models = list(dict.fromkeys(m for m in models if m not in excluded))
    if not models:
        raise UsageError(f"--models {spec!r} selects no model")
    for model in sorted(set(_split(args.want_direct)) - set(models)):
        warn(f"--want-direct {model} is not among the models of this run")
    return models, catalog


def _preflight(ctx: RunContext, keys: KeySource, todo: list[Cell]) -> bool:
    """Read the key once before planning calls; without it every cell's baseline fails."""
    if not todo:
        return True
    try:
        keys.read()
    except MissingCredential as exc:
        ctx.stop(str(exc), "baseline-failed")
        for cell in todo:
            record_state(ctx, cell, CellOutcome("baseline-failed", final=False, reason=str(exc)))
        return False
    return True


def _run_record(run_id: str, route: Route, args: argparse.Namespace, models: list[str],
                session: Session, options: Options) -> dict[str, Any]:
    return {"t": round(time.time(), 3), "run": run_id, "event": "start", "route": route.name,
            "kind": route.kind, "base": route.display_base(), "key_source": route.key or "none",
            "models": models, "seed": session.seed, "canary": session.canary,
            "trace_chars": len(session.trace), "trace_tokens": session.trace_tokens,
            "want_direct": sorted(options.want_direct), "steps": list(options.steps),
            "positions": list(options.positions), "variants": list(options.variants),
            "probe": options.probe, "budget": args.budget, "lane_attempts": options.lane_attempts}


def _finish(ctx: RunContext, cells: list[Cell], left: list[str], budget: Budget, out: OutDir) -> int:
    print(f"{len(cells) - len(left)}/{len(cells)} cells finished; ${budget.spent:.4f} of "
          f"${budget.cap:.2f} spent in {out.path}")
    if ctx.stop_reason:
        # Only a missing credential stops a run as "baseline-failed": that is an input error.
        label = "error" if ctx.stop_state == "baseline-failed" else "stopped"
        print(redact.scrub(f"{label}: {ctx.stop_reason}"), file=sys.stderr)
    if left:
        print(f"{len(left)} cells left; rerun the same command to resume. "
              f"`report --out {out.path}` shows what is measured so far.")
        return 2 if ctx.stop_state == "baseline-failed" else 1
    print(f"next: report --out {out.path}")
    return 0


def _split(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]
