"""``models``: what a route lists, minus aliases, ``:batch``, non-text and non-reasoning ids."""

from __future__ import annotations

import argparse
import json

from capplan.evals.reasoning_replay.provider.catalog import fetch, select
from capplan.evals.reasoning_replay.provider.credentials import key_source
from capplan.evals.reasoning_replay.provider.pricing import from_catalog
from capplan.evals.reasoning_replay.routes import resolve_route


def models_command(args: argparse.Namespace) -> int:
    """Print the ids worth measuring (cheapest output first) and the skipped ones with why."""
    route = resolve_route(args.route, kind=args.kind, base_url=args.base_url, key_env=args.key_env)
    entries = fetch(route, key_source(route), args.timeout)
    selection = select(entries)
    if args.json:
        print(json.dumps({"test": selection.keep, "skip": selection.skip}, indent=1))
        return 0
    prices = from_catalog(entries)
    width = max([len(m) for m in selection.keep + [s for s, _ in selection.skip]] + [10])
    print(f"# {len(selection.keep)} to test (cheapest output first), {len(selection.skip)} skipped")
    for model in selection.keep:
        price = prices.prices.get(model)
        cost = f"in ${price.prompt * 1e6:.2f}/M  out ${price.completion * 1e6:.2f}/M" if price else "price unknown"
        print(f"{model:<{width}}  {cost}")
    if selection.skip:
        print("# skipped")
        for model, reason in selection.skip:
            print(f"# {model:<{width}}  {reason}")
    if selection.keep:
        print(f"# --models {','.join(selection.keep)}")
    return 0
