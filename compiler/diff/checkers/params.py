"""``params``: the generation flags handed to the params_policy (supports_seed, reasoning routing …)."""

from capplan.compiler.diff.checkers.base import Checker

CHECKER = Checker(
    name="params",
    description="params_policy flags: seed support, reasoning routing, sampling drops, budgets",
    owns=(("policies", "params_policy", "params"),),
)
