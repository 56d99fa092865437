"""What a route lists under ``/models``, and which of those ids are worth measuring.

Skipped: aliases of listed ids (``~``-prefixed, or a ``canonical_slug`` that is itself
listed), ``:batch`` twins, models whose output is not text only, and models that declare
their supported parameters without any reasoning parameter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from capplan.evals.reasoning_replay.errors import HarnessError, UsageError
from capplan.evals.reasoning_replay.provider import transport
from capplan.evals.reasoning_replay.provider.credentials import KeySource, auth_headers
from capplan.evals.reasoning_replay.provider.pricing import PriceList, from_catalog
from capplan.evals.reasoning_replay.routes import Route

REASONING_PARAMS = ("reasoning", "include_reasoning", "reasoning_effort")


@dataclass(frozen=True)
class Selection:
    """Ids to test (cheapest output first) and skipped ids with the reason."""

    keep: list[str]
    skip: list[tuple[str, str]]


def fetch(route: Route, keys: KeySource, timeout: float = 60.0) -> list[dict[str, Any]]:
    """The route's ``/models`` entries, normalised to carry an ``id``."""
    url = route.base_url.rstrip("/") + "/models"
    key = keys.read()
    reply = transport.send("GET", url, None, auth_headers(route, key), timeout)
    if reply.status == 401:
        fresh = keys.refresh(key)  # a rotated Portal key: read the file once more
        if fresh is not None:
            reply = transport.send("GET", url, None, auth_headers(route, fresh), timeout)
    if not reply.ok:
        status = f"HTTP {reply.status}: " if reply.status else ""
        raise HarnessError(f"listing models at {route.display_base()}/models failed: "
                           f"{status}{reply.error}")
    body = reply.body or {}
    entries = body.get("data") if isinstance(body.get("data"), list) else body.get("models")
    if not isinstance(entries, list):
        raise HarnessError(f"{route.display_base()}/models answered without a 'data' or 'models' list")
    out = []
    for entry in entries:
        if isinstance(entry, dict) and (entry.get("id") or entry.get("name")):
            entry = dict(entry)
            entry["id"] = str(entry.get("id") or entry["name"]).removeprefix("models/")
            out.append(entry)
    return out


def select(entries: list[dict[str, Any]]) -> Selection:
    """Apply the skip rules; order the kept ids by output price (unknown prices last)."""
    listed = {e["id"] for e in entries}
    prices = from_catalog(entries)
    keep: list[str] = []
    skip: list[tuple[str, str]] = []
    for entry in entries:
        reason = _skip_reason(entry, listed)
        if reason:
            skip.append((entry["id"], reason))
        else:
            keep.append(entry["id"])
    keep.sort(key=lambda m: (prices.per_million_out(m) is None, prices.per_million_out(m) or 0.0, m))
    return Selection(keep, skip)


def _skip_reason(entry: dict[str, Any], listed: set[str]) -> str:
    model_id: str = entry["id"]
    slug = entry.get("canonical_slug")
    if model_id.startswith("~") or (isinstance(slug, str) and slug != model_id and slug in listed):
        return "alias of a listed id"
    if model_id.endswith(":batch"):
        return "batch twin of a listed id"
    arch: dict[str, Any] = entry["architecture"] if isinstance(entry.get("architecture"), dict) else {}
    outputs = arch.get("output_modalities")
    methods = entry.get("supportedGenerationMethods")
    if (isinstance(outputs, list) and outputs != ["text"]) or (
            isinstance(methods, list) and "generateContent" not in methods):
        return "output is not text only"
    params = entry.get("supported_parameters")
    if isinstance(params, list) and not any(p in params for p in REASONING_PARAMS):
        return "no reasoning parameter (not a reasoning model)"
    if entry.get("thinking") is False:
        return "no thinking support"
    return ""


def portal_cap(spec: str) -> float | None:
    """The price cap of ``portal-max:N`` (None for ``portal-all``); checked before any request."""
    if spec == "portal-all":
        return None
    try:
        if not spec.startswith("portal-max:"):
            raise ValueError(spec)
        return float(spec.split(":", 1)[1])
    except ValueError:
        raise UsageError(f"--models {spec!r}: expected portal-all or portal-max:<USD per 1M "
                         f"output tokens>, e.g. portal-max:4") from None


def portal_models(cap: float | None, entries: list[dict[str, Any]]) -> list[str]:
    """The selection, limited to ids whose listed output price is at most ``cap`` per 1M."""
    keep = select(entries).keep
    if cap is None:
        return keep
    prices: PriceList = from_catalog(entries)
    return [m for m in keep if (price := prices.per_million_out(m)) is not None and price <= cap]
