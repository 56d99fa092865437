"""``inputs``: the digests of the files a plan was compiled from, and the models fingerprint.

A change here alone means the plan behaves exactly as before; ``--ignore inputs`` hides it.
"""

from collections.abc import Mapping
from typing import Any

from capplan.compiler.diff.checkers.base import Checker
from capplan.compiler.diff.walk import Path
from capplan.executor.plan import Provenance


class InputsChecker(Checker):
    """Input digests are facts about files, not layer outputs: they have no provenance."""

    def source(self, path: Path, old: Mapping[str, Any], new: Mapping[str, Any]) -> Provenance | None:
        return None


CHECKER = InputsChecker(
    name="inputs",
    description="input file paths and sha256 digests, and models_fingerprint (from the run's manifest.json)",
    owns=(("inputs",), ("models_fingerprint",)),
)
