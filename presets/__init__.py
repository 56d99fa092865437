"""Bundled data: model presets, provider bindings, pricing and the model catalogue.

This package holds data only; :func:`data_dir` tells the compiler where it lives.
"""

from pathlib import Path


def data_dir() -> Path:
    """Folder holding the bundled ``model_presets.yaml``, ``providers.yaml``, ``pricing.json``."""
    return Path(__file__).resolve().parent
