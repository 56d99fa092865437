"""Declared constructor parameters: each policy class says what its ``params:`` may hold.

A policy that takes parameters declares them as a nested pydantic model named ``Params``
(field names, types, defaults, ranges and a one-line description each); a policy without one
takes none. The registry holds every class to it (the fields must be exactly the constructor's
keywords), the compiler validates presets against it with located errors, the executor
validates a plan against it before constructing anything, and ``capplan policies`` and the
JSON Schemas are generated from it.
"""

# no `from __future__ import annotations`: pydantic then reads these annotations as objects
# instead of evaluating strings, a measurable share of every command's start-up

import inspect
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from capplan.executor.errors import PolicyParamsError


class PolicyParams(BaseModel):
    """Base of every ``Params`` model: unknown keys are errors, no type coercion, finite numbers only."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False, defer_build=True)


class NoParams(PolicyParams):
    """This policy takes no parameters."""


def params_model(cls: type[Any]) -> type[PolicyParams]:
    """The ``Params`` model ``cls`` declares (``NoParams`` when it declares none)."""
    model = getattr(cls, "Params", NoParams)
    if not (isinstance(model, type) and issubclass(model, PolicyParams)):
        raise TypeError(f"{cls.__qualname__}.Params must subclass capplan.executor.policy_params.PolicyParams")
    return model


def constructor_keywords(cls: type[Any]) -> set[str] | None:
    """The keywords ``cls(...)`` accepts; None when it takes ``**kwargs`` (anything)."""
    if cls.__init__ is object.__init__:
        return set()
    params = inspect.signature(cls.__init__).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    return {p.name for p in params if p.name != "self"
            and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)}


def declaration_problem(cls: type[Any]) -> str | None:
    """Why ``cls``'s ``Params`` does not describe its constructor, or None when it does."""
    try:
        model = params_model(cls)
    except TypeError as exc:
        return str(exc)
    accepted = constructor_keywords(cls)
    declared = set(model.model_fields)
    if accepted is None or accepted == declared:
        return None
    if model is NoParams:
        return (f"{cls.__qualname__} takes constructor parameters {sorted(accepted)} but declares no Params model; "
                "declare them as `class Params(PolicyParams)` in the class body")
    return f"{cls.__qualname__}.Params declares {sorted(declared)}, but its constructor takes {sorted(accepted)}"


class ParamProblem:
    """One problem with one parameter: where (``loc`` below ``params``) and what."""

    __slots__ = ("loc", "message", "unknown")

    def __init__(self, loc: tuple[str | int, ...], message: str, unknown: bool = False) -> None:
        self.loc, self.message, self.unknown = loc, message, unknown


def check_params(cls: type[Any], params: dict[str, Any], *, only: set[str] | None = None) -> list[ParamProblem]:
    """Problems with ``params`` for ``cls``; ``only`` restricts them to those keys (a partial block).

    Messages never quote the offending value: a parameter is policy data, but a value pasted
    into the wrong place may be anything.
    """
    model = params_model(cls)
    try:
        model.model_validate(params)
    except ValidationError as exc:
        out = []
        for err in exc.errors():
            loc = tuple(err["loc"])
            if only is not None and (not loc or loc[0] not in only):
                continue
            if err["type"] == "missing" and only is not None:
                continue
            out.append(ParamProblem(loc, _message(err), unknown=err["type"] == "extra_forbidden"))
        return out
    return []


def _message(err: Any) -> str:
    kind = err["type"]
    if kind == "extra_forbidden":
        return f"unknown parameter {str(err['loc'][-1])!r}"
    if kind == "missing":
        return f"required parameter {str(err['loc'][-1])!r} is missing"
    if kind == "finite_number":
        return "must be a finite number (not .nan or .inf)"
    return str(err["msg"]).removeprefix("Value error, ")


def construct(cls: type[Any], params: dict[str, Any]) -> Any:
    """``cls(**params)`` after validating them; a refusal is a :class:`PolicyParamsError` (a ``ValueError``) naming the parameter."""
    problems = check_params(cls, params)
    if problems:
        raise PolicyParamsError("; ".join(f"{'.'.join(map(str, p.loc)) or 'params'}: {p.message}" for p in problems))
    return cls(**params)


def describe(cls: type[Any]) -> list[dict[str, Any]]:
    """Each declared parameter: name, type, default (JSON), one-line description."""
    out = []
    for name, field in params_model(cls).model_fields.items():
        out.append({
            "name": name,
            "type": _type_name(field.annotation),
            "default": None if field.is_required() else field.get_default(call_default_factory=True),
            "required": field.is_required(),
            "constraints": [c for c in (_constraint(m) for m in field.metadata) if c],
            "description": field.description or "",
        })
    return out


_BOUNDS = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<", "min_length": "min length", "max_length": "max length"}


def _constraint(meta: Any) -> str | None:
    for attr, word in _BOUNDS.items():
        value = getattr(meta, attr, None)
        if value is not None:
            return f"{word} {value}"
    return None


def _type_name(annotation: Any) -> str:
    text = annotation.__name__ if isinstance(annotation, type) else str(annotation)
    return text.replace("typing.", "").replace("NoneType", "None")
