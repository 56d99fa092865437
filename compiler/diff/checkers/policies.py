"""``policies``: which policy each slot uses, and the constructor params of every slot but params_policy."""

from capplan.compiler.diff.checkers.base import Checker

CHECKER = Checker(
    name="policies",
    description="policy name per slot, and constructor params of every slot except params_policy",
    owns=(("policies",),),
    excludes=(("policies", "params_policy", "params"),),
)
