"""Prices for the cost estimate when a provider does not report ``usage.cost``.

The source is the Portal price list (its ``/models`` catalogue, per-token USD strings) or a
``--prices`` file. A model missing from the list is priced at a deliberately high default,
and every cost record says which source priced it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capplan.evals.reasoning_replay.errors import UsageError


@dataclass(frozen=True)
class Price:
    """USD per token, and where the figure came from."""

    prompt: float
    completion: float
    source: str


# Deliberately pessimistic: an unknown model should stop a budget early, not late.
DEFAULT_PRICE = Price(5e-6, 25e-6, "default-price")
FREE = Price(0.0, 0.0, "keyless")
LOCAL = Price(0.0, 0.0, "local-server")


class PriceList:
    """Prices by model id; vendor-prefixed ids also answer for their bare name."""

    def __init__(self, prices: dict[str, Price] | None = None, free: Price | None = None) -> None:
        self.prices = prices or {}
        self.free = free  # a keyless or loopback server costs nothing: FREE or LOCAL says which

    def lookup(self, model: str) -> Price:
        """The price of ``model``, or the pessimistic default."""
        if self.free is not None:
            return self.free
        return (self.prices.get(model) or self.prices.get(model.split("/", 1)[-1])
                or DEFAULT_PRICE)

    def per_million_out(self, model: str) -> float | None:
        """Output USD per 1M tokens when the list knows the model (for ``portal-max:N``)."""
        price = self.prices.get(model)
        return price.completion * 1e6 if price else None


def from_catalog(entries: list[dict[str, Any]], source: str = "price-list") -> PriceList:
    """A price list from Portal/OpenRouter ``/models`` entries (``pricing.prompt|completion``)."""
    prices: dict[str, Price] = {}
    for entry in entries:
        pricing = entry.get("pricing") if isinstance(entry, dict) else None
        if not isinstance(pricing, dict) or not entry.get("id"):
            continue
        try:
            price = Price(float(pricing.get("prompt") or 0), float(pricing.get("completion") or 0),
                          source)
        except (TypeError, ValueError):
            continue  # "-1" style placeholders or junk: leave the model to the default
        if price.prompt < 0 or price.completion < 0:
            continue
        model_id = str(entry["id"])
        prices[model_id] = price
        prices.setdefault(model_id.split("/", 1)[-1], price)
    return PriceList(prices)


def load_prices_file(path: Path) -> PriceList:
    """``--prices FILE``: a saved ``/models`` response, or ``{"model": [in, out]}`` in USD per 1M."""
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        raise UsageError(f"--prices {path}: no such file") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"--prices {path}: not readable JSON ({exc})") from None
    if isinstance(data, dict) and isinstance(data.get("data"), list):
        return from_catalog(data["data"], source=f"prices-file:{path.name}")
    if not isinstance(data, dict):
        raise UsageError(f"--prices {path}: expected an object of model -> [in, out] USD per 1M")
    prices: dict[str, Price] = {}
    for model, pair in data.items():
        if (not isinstance(pair, list) or len(pair) != 2
                or not all(isinstance(x, (int, float)) for x in pair)):
            raise UsageError(f"--prices {path}: {model!r} must be [input, output] USD per 1M tokens")
        prices[model] = Price(pair[0] / 1e6, pair[1] / 1e6, f"prices-file:{path.name}")
    return PriceList(prices)


def estimate(price: Price, prompt_tokens: int, output_tokens: int) -> float:
    """USD for a call of this size at ``price``."""
    return prompt_tokens * price.prompt + output_tokens * price.completion
