"""``pricing``: the price entry (USD per million tokens) and the key it was found under."""

from capplan.compiler.diff.checkers.base import Checker

CHECKER = Checker(
    name="pricing",
    description="price entry: key, input / output / cache prices",
    owns=(("pricing",),),
)
