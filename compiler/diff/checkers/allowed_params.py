"""``allowed_params``: allowed_openai_params and the litellm_models declaration that produced them."""

from collections.abc import Mapping
from typing import Any

from capplan.compiler.diff.checkers.base import Checker
from capplan.compiler.diff.walk import Path, source_of
from capplan.executor.plan import Provenance


class AllowedParamsChecker(Checker):
    """The plan records the litellm_models entry's location once, under allowed_openai_params."""

    def source(self, path: Path, old: Mapping[str, Any], new: Mapping[str, Any]) -> Provenance | None:
        if path[:1] == ("litellm_model",):
            return source_of(("allowed_openai_params",), new, old)
        return source_of(path, new, old)


CHECKER = AllowedParamsChecker(
    name="allowed_params",
    description="allowed_openai_params and the litellm_models entry behind them",
    owns=(("allowed_openai_params",), ("litellm_model",)),
)
