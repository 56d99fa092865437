"""``loop``: the trial-loop knobs (resample counts, context window, watermark, turn budget)."""

from capplan.compiler.diff.checkers.base import Checker

CHECKER = Checker(
    name="loop",
    description="loop knobs: resample counts, context window and watermark, tool output cap, turns, per-attempt timeout",
    owns=(("loop",),),
)
