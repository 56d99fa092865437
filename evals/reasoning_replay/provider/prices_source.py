"""Which price list a run estimates costs from (when the provider reports none)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from capplan.evals.reasoning_replay.errors import HarnessError
from capplan.evals.reasoning_replay.provider.catalog import fetch
from capplan.evals.reasoning_replay.provider.credentials import KeySource, NousAuthKey, hermes_dir
from capplan.evals.reasoning_replay.provider.pricing import FREE, LOCAL, PriceList, from_catalog, load_prices_file
from capplan.evals.reasoning_replay.routes import ROUTES, Route


def price_list(args: argparse.Namespace, route: Route, keys: KeySource,
               catalog: list[dict[str, Any]]) -> PriceList:
    """``--prices`` if given; free for keyless and loopback servers; otherwise the Portal price list.

    The Portal list is fetched from the route itself on ``nous`` and from the public Portal
    for other routes, but only when Portal credentials exist. Without any list, the
    pessimistic default price applies (and cost records say so).
    """
    if args.prices:
        return load_prices_file(Path(args.prices))
    if not route.key:
        return PriceList(free=FREE)
    if route.name == "custom" and route.is_local():
        # a dummy key on one's own loopback server (llama.cpp, vLLM) pays nobody; a named route
        # pointed at loopback (a tunnel, a test stand-in) still stands for its paid service
        return PriceList(free=LOCAL)
    if catalog:
        return from_catalog(catalog)
    if route.lanes:
        source, source_keys = route, keys
    elif (hermes_dir() / "auth.json").exists():
        source, source_keys = ROUTES["nous"], NousAuthKey()
    else:
        print("note: no Portal credentials, so calls without usage.cost are priced at the "
              "default rate; pass --prices FILE for real prices", file=sys.stderr)
        return PriceList()
    try:
        return from_catalog(fetch(source, source_keys, args.timeout))
    except HarnessError as exc:
        print(f"warning: price list unavailable ({exc}); using the default rate", file=sys.stderr)
        return PriceList()
