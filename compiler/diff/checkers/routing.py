"""``routing``: the effective OpenRouter upstream pin and fallback switch."""

from capplan.compiler.diff.checkers.base import Checker

CHECKER = Checker(
    name="routing",
    description="OpenRouter: provider_order pin, allow_fallbacks, attribution headers, data_collection",
    owns=(("openrouter",),),
)
