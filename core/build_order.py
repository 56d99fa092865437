"""Building pydantic validators in an order that builds each section once (seam *shared sections*).

pydantic reuses, inside a model's validator, the validator of a section model already built; a
section still deferred is built anew inside each model that holds it, and again when it is built
on its own. :func:`build_first` builds the sections a caller names before the models that hold
them; which sections those are is the caller's knowledge (:mod:`capplan.compiler.shared_sections`).
The reference mode leaves each validator to build its own.
"""

from __future__ import annotations

from pydantic import BaseModel

from capplan.core.reference_mode import reference_mode


def build_first(*sections: type[BaseModel]) -> None:
    """Build each section's validator now, in the order given, unless it is built already."""
    if reference_mode():
        return
    for section in sections:
        if not section.__pydantic_complete__:
            section.model_rebuild()
