"""BFCL's ground-truth calls (``mv(source='a', destination='b')``) as tool calls, and back.

The benchmark writes its ground truth as Python call expressions and runs them with ``eval``.
capplan never evaluates them: each is parsed with :mod:`ast`, its arguments must be literals
(read with :func:`ast.literal_eval`), and positional arguments are named from the signature of
the method that implements the tool. The values then go through JSON, as an agent's arguments
do on the wire, so a replayed ground truth calls the tools with exactly what a model would send.
"""

from __future__ import annotations

import ast
import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from capplan.trials.importers.bfcl.source import BfclDataError


@dataclass(frozen=True)
class Call:
    """One tool call: the tool's name and its keyword arguments (JSON values)."""

    name: str
    arguments: dict[str, Any]


def parse_call(text: str, signature_of: Callable[[str], inspect.Signature | None], *, where: str) -> Call:
    """``text`` (one ground-truth call) as a :class:`Call`; ``signature_of`` names positional arguments."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise BfclDataError(f"ground-truth call {text!r} is not a Python call: {exc.msg}", location=where) from None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise BfclDataError(f"ground-truth call {text!r} is not a call of a function by name", location=where)
    name = node.func.id
    signature = signature_of(name)
    if signature is None:
        raise BfclDataError(f"ground-truth call {text!r} names {name!r}, which no involved class has", location=where)
    names = [p.name for p in signature.parameters.values()
             if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(node.args) > len(names):
        raise BfclDataError(f"ground-truth call {text!r} passes more positional arguments than {name} takes",
                            location=where)
    arguments: dict[str, Any] = {}
    for position, value in enumerate(node.args):
        arguments[names[position]] = _literal(value, text, where)
    for keyword in node.keywords:
        if keyword.arg is None:
            raise BfclDataError(f"ground-truth call {text!r} unpacks arguments (**)", location=where)
        arguments[keyword.arg] = _literal(keyword.value, text, where)
    # through JSON, as on the wire: tuples become lists, and anything JSON cannot hold is refused here
    try:
        wire = json.loads(json.dumps(arguments))
    except (TypeError, ValueError) as exc:
        raise BfclDataError(f"ground-truth call {text!r} has an argument JSON cannot hold: {exc}",
                            location=where) from None
    return Call(name=name, arguments=wire)


def _literal(node: ast.expr, text: str, where: str) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise BfclDataError(f"ground-truth call {text!r} has an argument that is not a literal",
                            location=where) from None


def model_call_text(name: str, arguments: dict[str, Any]) -> str:
    """A model's tool call as BFCL's function-calling handlers decode it for its checker.

    The same text BFCL builds from an OpenAI tool call: ``name(k1=repr(v1),k2=repr(v2))``.
    """
    return f"{name}({','.join(f'{key}={value!r}' for key, value in arguments.items())})"
