"""``binding``: the provider binding (endpoint, credential env names, slug rewrite, rate-limit patterns)."""

from capplan.compiler.diff.checkers.base import Checker

CHECKER = Checker(
    name="binding",
    description="provider binding: endpoint, credential env var names, routing hints, slug rewrite",
    owns=(("binding",),),
)
