"""The bundled Responses plan the tests drive (gpt-5, ``openai-responses``), on either transport."""

from __future__ import annotations

from pathlib import Path

from capplan.executor.plan import Plan

GPT5 = Path(__file__).resolve().parents[1] / "golden" / "plans" / "gpt-5.json"


def plan_on(transport: str, folder: Path) -> Path:
    """The bundled gpt-5 plan on ``transport`` (direct as bundled; litellm as `wire.transport: litellm` makes it)."""
    if transport == "direct":
        return GPT5
    body = Plan.load(GPT5).body()
    body["wire"] = {**body["wire"], "transport": transport}
    path = folder / f"gpt-5-{transport}.json"
    path.write_bytes(Plan.seal(body).to_bytes())
    return path
