"""Reaching a provider: routes' keys, HTTP, the catalogue, prices, pacing and lanes."""
