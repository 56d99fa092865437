"""Write the golden file for the ``anthropic_ephemeral`` cache policy's worked example.

Run from the repository root::

    .venv/bin/python tests/policies/regen_cache_golden.py

The golden holds what the request carries after both cache phases for the example in the
LLM-layer spec (``cache_policy`` § "Example — Anthropic request transformation"); the test
compares a fresh run with it byte for byte. Review a regenerated file against that example
before keeping it: the test also checks it against a transcription of the spec's output.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from capplan.core.canonical import canonical_bytes
from capplan.executor.policies.cache_policy import AnthropicEphemeralCache

GOLDEN = Path(__file__).parent / "golden" / "anthropic_ephemeral_worked_example.json"
REGEN_COMMAND = ".venv/bin/python tests/policies/regen_cache_golden.py"

TOOL_CALL: dict[str, Any] = {"id": "call_1", "type": "function", "function": {"name": "a", "arguments": "{}"}}


def worked_example() -> dict[str, Any]:
    """The spec's example through both phases: ``{"messages": [...], "tools": [...]}``."""
    policy = AnthropicEphemeralCache()
    system = "You are a helpful assistant."
    tools = [
        {"type": "function", "function": {"name": "a", "parameters": {}}},
        {"type": "function", "function": {"name": "b", "parameters": {}}},
    ]
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": "thinking", "tool_calls": [TOOL_CALL]},
        {"role": "tool", "content": "result", "tool_call_id": TOOL_CALL["id"]},
    ]
    wire_system, wire_tools, messages = policy.apply(system, tools, messages)
    # message conversion puts the (already marked) system prompt first; the other messages are
    # already in wire shape here
    wire = [{"role": "system", "content": wire_system}, *messages]
    return {"messages": policy.apply_messages(wire), "tools": wire_tools}


def main() -> None:
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_bytes(canonical_bytes(worked_example()))
    print(f"wrote {GOLDEN}")


if __name__ == "__main__":
    main()
