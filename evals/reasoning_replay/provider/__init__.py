"""Reaching a provider: keys, HTTP, the catalogue, prices, pacing and lanes."""
