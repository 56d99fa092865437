"""``value_rules``: per parameter, per value, what happens to it (drop, rewrite, reject)."""

from capplan.compiler.diff.checkers.base import Checker

CHECKER = Checker(
    name="value_rules",
    description="param_value_rules: per parameter and value, the action and its evidence",
    owns=(("param_value_rules",),),
)
