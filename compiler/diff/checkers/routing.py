"""``routing``: the effective OpenRouter upstream pin and fallback switch."""

from compiler.diff.checkers.base import Checker

CHECKER = Checker(
    name="routing",
    description="OpenRouter routing: provider_order pin and allow_fallbacks",
    owns=(("openrouter",),),
)
