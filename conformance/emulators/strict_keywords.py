"""The strict tool-schema keyword check both OpenAI emulators hold a request to.

OpenAI validates a ``strict: true`` function's parameters against the subset of JSON Schema its
structured outputs take, and answers a keyword outside it with ``In context=(...), '<keyword>'
is not permitted.``, naming the schema position as a Python tuple of the keys that lead to it.
The chat shape nests the function (``tools[i].function.strict``); the Responses shape is flat
(``tools[i].strict``), and a Responses function without ``strict`` is strict.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from capplan.executor.policies.schema_sanitizer import walk_schemas


def context_of(path: tuple[Any, ...]) -> str:
    """OpenAI's spelling of a schema position: ``()`` for the root, ``('properties', 'x')`` below it."""
    return "(" + ", ".join(repr(str(key)) for key in path) + ("," if len(path) == 1 else "") + ")"


def strict_keyword_not_permitted(emulator: object, body: Mapping[str, Any],
                                 params: Mapping[str, Any]) -> dict[str, Any] | None:
    """A strict function whose parameters use a keyword in ``params.keywords`` at some schema position.

    Fields: ``name`` (the function), ``tool`` (its index), ``context``, ``keyword``.
    """
    keywords = [str(k) for k in params.get("keywords") or ()]
    tools = body.get("tools")
    if not isinstance(tools, list):
        return None
    for index, tool in enumerate(tools):
        if not isinstance(tool, Mapping):
            continue
        nested = tool.get("function")
        function = nested if isinstance(nested, Mapping) else tool
        # chat completions: strict only when said; Responses: strict unless said otherwise
        strict = function.get("strict") is True if nested is not None else function.get("strict", True) is not False
        schema = function.get("parameters")
        if not strict or not isinstance(schema, Mapping):
            continue
        for path, node in walk_schemas(dict(schema)):
            for keyword in keywords:
                if keyword in node:
                    return {"name": function.get("name", ""), "tool": index, "context": context_of(path),
                            "keyword": keyword}
    return None
