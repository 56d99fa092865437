"""``providers.yaml``: one transport binding per provider key."""

# no `from __future__ import annotations`: pydantic then reads these annotations as objects
# instead of evaluating strings, a measurable share of every command's start-up

from pydantic import ConfigDict, RootModel

from capplan.core.build_order import build_first
from capplan.executor.binding import ProviderBinding

# the parametrized root model below is built as the class is created, holding the binding: built
# first, the binding is built once (seam *shared sections*), not again on its own later
build_first(ProviderBinding)


class ProvidersFile(RootModel[dict[str, ProviderBinding]]):
    """Provider key (lower-case first '/' segment of ModelConfig.provider) → binding."""

    # built on first use: compile imports this module for binding_key before it loads anything
    model_config = ConfigDict(defer_build=True)


def binding_key(provider: str) -> str:
    """The lookup key for ``provider``: its first '/' segment, lower-cased."""
    return provider.split("/", 1)[0].lower()
