"""The bundled models compiled onto chat completions (``examples/overlays/chat-completions.yaml``).

gpt-5, the o-series and Grok 4.6 go through the Responses API by default; the chat-completions
rules and wire facts for them (OpenAI's ``max_completion_tokens`` rename, o3's system message as
a user message, the chat conformance rules) still hold for a deployment that keeps them on chat
completions, so the tests of those paths compile the models with the overlay that does.
"""

from __future__ import annotations

import functools
from pathlib import Path

from capplan.compiler.compile import compile_paths
from capplan.executor.plan import Plan

ROOT = Path(__file__).resolve().parents[1]
OVERLAY = ROOT / "examples" / "overlays" / "chat-completions.yaml"


@functools.cache
def chat_route_plans() -> dict[str, Plan]:
    """Every catalogue model compiled with the chat-completions overlay, by key."""
    # compile_paths raises on any input error, so a broken overlay fails the test that asked
    return dict(compile_paths(overlays=[OVERLAY], root=ROOT).plans)


def chat_route_plan(key: str) -> Plan:
    """The catalogue model ``key`` on chat completions."""
    return chat_route_plans()[key]


def write_chat_route_plan(key: str, folder: Path) -> Path:
    """``chat_route_plan(key)`` written as ``folder/<key>.json`` (for commands that read plan files)."""
    path = folder / f"{key}.json"
    path.write_bytes(chat_route_plan(key).to_bytes())
    return path
