"""``defaults``: the run config's per-model request defaults (temperature, seed, reasoning …)."""

from capplan.compiler.diff.checkers.base import Checker

CHECKER = Checker(
    name="defaults",
    description="request defaults from the run config: temperature, seed, top_p, max_tokens, parallel_tool_calls, reasoning",
    owns=(("request_defaults",),),
)
