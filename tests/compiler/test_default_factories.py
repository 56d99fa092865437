"""No capplan model gives pydantic a builtin as a default factory (``capplan.core.default_factories``).

pydantic reads a default factory's signature when it builds a validator; for a builtin such as
``dict`` or ``list`` that parses a text signature with tokenize, whose first use compiles a large
regex on every start of the command that builds the model.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator

from pydantic import BaseModel

from capplan.core.default_factories import empty_dict, empty_list
from tests.layer_modules import import_layers

LAYERS = ("core", "compiler", "executor", "trials", "probes", "conformance", "evals", "cli")


def _import_everything() -> None:
    import_layers(LAYERS)


def _models(cls: type[BaseModel]) -> Iterator[type[BaseModel]]:
    for sub in cls.__subclasses__():
        if sub.__module__.startswith("capplan."):
            yield sub
        yield from _models(sub)


def _needs_a_text_signature(factory: object) -> bool:
    # what inspect.signature can read only from __text_signature__: builtin functions and classes
    return inspect.isbuiltin(factory) or (isinstance(factory, type) and factory.__module__ == "builtins")


def test_no_model_field_has_a_builtin_default_factory() -> None:
    _import_everything()
    models = sorted(set(_models(BaseModel)), key=lambda m: f"{m.__module__}.{m.__qualname__}")
    assert len(models) > 50  # the walk found the models
    offenders = [f"{model.__module__}.{model.__qualname__}.{name}: {field.default_factory!r}"
                 for model in models for name, field in model.model_fields.items()
                 if field.default_factory is not None and _needs_a_text_signature(field.default_factory)]
    assert offenders == [], "use capplan.core.default_factories.empty_dict / empty_list instead"


def test_the_factories_give_fresh_empty_values_read_without_tokenize() -> None:
    assert empty_dict() == {} and empty_dict() is not empty_dict()
    assert empty_list() == [] and empty_list() is not empty_list()
    assert not _needs_a_text_signature(empty_dict) and _needs_a_text_signature(dict)
    assert inspect.signature(empty_dict).parameters == {}
