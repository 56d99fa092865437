"""Small readers shared by the tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FAKE_KEY = "sk-test-0123456789abcdefSECRETVALUE-zz"
PRICES = {"fake-model": [1.0, 2.0]}  # USD per 1M tokens


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def matrix(out: Path) -> list[dict[str, Any]]:
    return json.loads((out / "matrix.json").read_text())["rows"]


def row(out: Path, model: str, lane: str = "direct", route: str | None = None) -> dict[str, Any]:
    rows = [r for r in matrix(out) if r["model"] == model and r["lane"] == lane
            and (route is None or r["route"] == route)]
    assert len(rows) == 1, f"expected one row for {model}/{lane}, got {matrix(out)}"
    return rows[0]


def cell(r: dict[str, Any], step: str, position: str, variant: str) -> dict[str, Any]:
    found = [c for c in r["cells"] if (c["step"], c["position"], c["variant"]) == (step, position, variant)]
    assert len(found) == 1, f"no cell {step}/{position}/{variant} in {r['cells']}"
    return found[0]


def prices_file(tmp: Path, prices: dict[str, list[float]] | None = None) -> Path:
    path = tmp / "prices.json"
    path.write_text(json.dumps(prices or PRICES))
    return path


def custom_run(url: str, out: Path, prices: Path, *extra: str, model: str = "fake-model",
               key_env: str = "FAKE_KEY", kind: str = "chat") -> list[str]:
    """A `run` command line for a custom route against a loopback server."""
    return ["run", "--route", "custom", "--kind", kind, "--base-url", url, "--key-env", key_env,
            "--models", model, "--out", str(out), "--prices", str(prices), "--rps", "0",
            "--retries", "0", "--seed", "7", "--quiet", *extra]
