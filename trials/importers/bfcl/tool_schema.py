"""BFCL function docs -> capplan tools, converted as BFCL's OpenAI function-calling handler does.

The benchmark's docs use its own type names (``dict``, ``float``, ``tuple``, ``any``, ...). Its
OpenAI handler maps them to JSON Schema types through the benchmark's type table (read from the
installed package), sets the top-level type to ``object``, marks a ``float`` with
``format: float`` and a sentence in its description, treats a missing or unknown type as
``string``, converts nested properties and the items of arrays (and of arrays of arrays), and
replaces a ``.`` in a function name with ``_``. This module does the same, and says so where
the benchmark's handler would crash instead (an item type outside the table).

The doc's ``response`` field (the shape of the result) has no place in a capplan tool: the
OpenAI handler leaves it inside the function object it sends, capplan's tools carry name,
description and parameters only (``docs/bfcl.md`` lists this difference).
"""

from __future__ import annotations

import copy
import re
from typing import Any

from capplan.trials.importers.bfcl.source import INSTALL_COMMAND, TESTED_VERSION, BfclDataError

#: what to do about function docs this importer cannot convert
_DATA_HINT = f"this importer reads bfcl-eval {TESTED_VERSION}'s function docs: {INSTALL_COMMAND}"

#: the sentence BFCL's OpenAI handler appends to the description of a float parameter
FLOAT_NOTE = " This is a float type value."


def convert_tool(doc: dict[str, Any], mapping: dict[str, str], *, where: str) -> dict[str, Any]:
    """``{name, description, parameters}`` of one function doc."""
    doc = copy.deepcopy(doc)
    name = doc.get("name")
    parameters = doc.get("parameters")
    if not isinstance(name, str) or not isinstance(parameters, dict):
        raise BfclDataError("a function doc has no name or no parameters object", location=where)
    # BFCL's handler overwrites the top-level type with `object`; a doc declaring anything but an
    # object (`dict`) would then be sent as something it does not describe, so it is refused
    declared = parameters.get("type", "dict")
    if declared not in ("dict", "object"):
        raise BfclDataError(f"function {name!r}: parameters must be an object schema (type dict), not type "
                            f"{str(declared)[:40]!r}", location=where, hint=_DATA_HINT)
    properties = parameters.get("properties") or {}
    if not isinstance(properties, dict):
        raise BfclDataError(f"function {name!r}: parameters.properties must map parameter names to schemas",
                            location=where, hint=_DATA_HINT)
    parameters["type"] = "object"
    parameters["properties"] = _properties(properties, mapping, f"{where}: {name}")
    return {"name": re.sub(r"\.", "_", name), "description": str(doc.get("description", "")),
            "parameters": parameters}


def _mapped(type_name: Any, mapping: dict[str, str], where: str) -> str:
    if not isinstance(type_name, str) or type_name not in mapping:
        # BFCL's handler raises a KeyError on an item type outside its table: say which one
        raise BfclDataError(f"item type {type_name!r} is not in the benchmark's type table", location=where)
    return mapping[type_name]


def _properties(properties: dict[str, Any], mapping: dict[str, str], where: str) -> dict[str, Any]:
    for key, schema in properties.items():
        here = f"{where}.{key}"
        if not isinstance(schema, dict):
            raise BfclDataError("a parameter's schema is not an object", location=here)
        declared = schema.get("type")
        if declared is None:
            schema["type"] = "string"
        else:
            if declared == "float":
                schema["format"] = "float"
                schema["description"] = str(schema.get("description", "")) + FLOAT_NOTE
            schema["type"] = mapping.get(declared, "string") if isinstance(declared, str) else "string"
        if schema["type"] not in ("array", "object"):
            continue
        if "properties" in schema:
            schema["properties"] = _properties(schema["properties"], mapping, here)
        elif isinstance(schema.get("items"), dict):
            items = schema["items"]
            items["type"] = _mapped(items.get("type"), mapping, f"{here}.items")
            inner = items.get("items")
            if items["type"] == "array" and isinstance(inner, dict):
                inner["type"] = _mapped(inner.get("type"), mapping, f"{here}.items.items")
            elif items["type"] == "object" and "properties" in items:
                items["properties"] = _properties(items["properties"], mapping, f"{here}.items")
    return properties
