"""Which section models are built on their own before the file models that hold them (seam *shared
sections*, built by :func:`capplan.core.build_order.build_first`).

pydantic reuses, inside a model's validator, the validator of a section model already built; a
section still deferred is built anew inside each model that holds it, and again when it is built
on its own (constructed directly, or as a default). Built first, each section is built once:

- linting an overlay builds three validators that hold the preset sections and the provider
  binding: the overlay's, the base presets' and the providers' (37 ms, 27 ms so);
- compiling builds the provider binding inside the providers file, inside each plan's binding
  reference and on its own, and the run config's sections inside the run config and on their own
  as its defaults (about 10 ms of ``capplan compile``).

``benchmarks/compiler_speed.py`` reports both commands. The reference mode leaves each validator to
build its own; the diagnostics and plans are the same byte for byte
(``tests/compiler/test_shared_sections.py``).
"""

from __future__ import annotations

from pydantic import BaseModel


def preset_sections() -> tuple[type[BaseModel], ...]:
    """The sections an overlay shares with the presets file: params, preset bodies and entries."""
    from capplan.compiler.inputs.preset_file import ParamsBlock, PresetBody, PresetEntry

    return ParamsBlock, PresetBody, PresetEntry


def binding_section() -> tuple[type[BaseModel], ...]:
    """The provider binding: in the providers file, in an overlay's bindings, in every plan."""
    from capplan.executor.binding import ProviderBinding

    return (ProviderBinding,)


def run_config_sections() -> tuple[type[BaseModel], ...]:
    """The run config's sections that are also built on their own, as its defaults."""
    from capplan.compiler.inputs.run_config import EngineConfig, TrialChoices
    from capplan.executor.rate_limits import RateLimits
    from capplan.executor.reasoning import ReasoningConfig

    return ReasoningConfig, EngineConfig, RateLimits, TrialChoices
