"""The ``schema_sanitizer`` slot: what a model is shown of each tool's parameter schema.

A sanitiser rewrites OpenAI-shaped function tools (``{"type": "function", "function": {...}}``)
into the JSON-Schema dialect a route accepts. This module holds the slot's contract (the base
class, the capability enum, the typed errors), the verbatim ``passthrough`` sanitiser, and the
position-aware walk every rewriting sanitiser shares: it tells a keyword whose value is a
subschema (``items``, ``anyOf`` …) from one whose value is data (``enum``, ``default``,
``examples`` …) and from a map of property *names* (``properties``, ``$defs`` …), so a
property literally called ``title`` or ``pattern`` is never mistaken for a keyword.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

from capplan.executor.errors import ExecutorError

#: One step into a schema: a keyword, then a property name or branch index where the keyword holds many.
PathSegment = str | int
SchemaPath = tuple[PathSegment, ...]

#: Keywords whose value maps names to subschemas. The names are data; the values are schemas.
SCHEMA_MAP_KEYWORDS: frozenset[str] = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)
#: Keywords whose value is a list of subschemas.
SCHEMA_LIST_KEYWORDS: frozenset[str] = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
#: Keywords whose value is one subschema (``items`` may also be a draft-4 list of subschemas).
SCHEMA_SINGLE_KEYWORDS: frozenset[str] = frozenset(
    {
        "items",
        "additionalItems",
        "additionalProperties",
        "unevaluatedItems",
        "unevaluatedProperties",
        "propertyNames",
        "contains",
        "not",
        "if",
        "then",
        "else",
        "contentSchema",
    }
)


class SchemaCapability(enum.Enum):
    """A JSON-Schema construct a route may or may not accept in tool parameters."""

    #: ``{"type": "object", "additionalProperties": {<schema>}}`` — a map with typed values.
    DICT_MAP_TYPED = "dict_map_typed"
    #: ``pattern`` keywords, including ones a RE2 engine cannot compile.
    REGEX_PATTERN = "regex_pattern"
    #: ``format`` keywords such as ``date-time``.
    DATE_TIME_FORMAT = "date_time_format"
    #: Pydantic's Decimal idiom: ``anyOf`` of a number and a patterned string.
    ANYOF_NUMERIC_STRING = "anyof_numeric_string"


class ToolSchemaError(ExecutorError, ValueError):
    """A tool's schema cannot be made valid for the route; names the tool and the JSON pointer."""

    code = "TOOL_SCHEMA"

    def __init__(self, tool: str, pointer: str, message: str) -> None:
        self.tool = tool
        self.pointer = pointer
        self.detail = message
        super().__init__(f"tool {tool!r}: {pointer or '(root)'}: {message}")


class ToolShapeError(ToolSchemaError):
    """The tool is not an OpenAI-shaped function tool, so there is no schema to sanitise."""


class SchemaRefError(ToolSchemaError):
    """A ``$ref`` points outside the tool's ``$defs``, or at a name the tool does not define."""


class SchemaRefCycleError(SchemaRefError):
    """A ``$ref`` re-enters a definition already being inlined: the schema is recursive."""

    def __init__(self, tool: str, pointer: str, chain: tuple[str, ...]) -> None:
        self.chain = chain
        super().__init__(
            tool,
            pointer,
            "recursive $ref cycle " + " -> ".join(chain) + " cannot be inlined into a finite schema "
            "(a sanitiser that tolerates cycles, such as gemini_recursive, substitutes an open object)",
        )


class SchemaRewriteError(ToolSchemaError):
    """A rewrite the route needs cannot be applied to this shape without losing or mixing data."""


class SchemaInvariantError(ToolSchemaError):
    """The sanitised output breaks a structural invariant; raised instead of sending a broken schema."""


class ToolSchemaSanitizer(ABC):
    """Base of the ``schema_sanitizer`` slot.

    ``sanitize`` must be pure and deterministic: it never mutates its argument, and equal input
    gives equal output, which is what lets the client memoise it on the tool list's digest.
    """

    slot: ClassVar[str] = "schema_sanitizer"
    name: ClassVar[str]

    @abstractmethod
    def sanitize(self, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Return new tool dicts carrying the schema this route should be shown."""

    @abstractmethod
    def supported_capabilities(self) -> frozenset[SchemaCapability]:
        """The capabilities this sanitiser lets through unchanged."""


class PassthroughSchema(ToolSchemaSanitizer):
    """Shows the model every tool exactly as declared (routes that accept arbitrary JSON Schema)."""

    name: ClassVar[str] = "passthrough"

    def sanitize(self, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Deep copies of ``tools``, so a later edit on either side cannot reach the other."""
        copied: list[dict[str, Any]] = json_copy(tools)
        return copied

    def supported_capabilities(self) -> frozenset[SchemaCapability]:
        """Every capability: nothing is rewritten."""
        return frozenset(SchemaCapability)


def rewrites(sanitizer: ToolSchemaSanitizer) -> bool:
    """Whether ``sanitizer`` may hand back content other than what it is given.

    False only for ``passthrough``'s own ``sanitize`` (inherited or not), whose result equals its
    input: the tool memo then hands on its own freshly read list instead of having it copied
    once more. Any class that defines ``sanitize`` rewrites, so a sanitiser needs no flag.
    """
    return type(sanitizer).sanitize is not PassthroughSchema.sanitize


def tool_function(tool: Any) -> tuple[str, dict[str, Any]]:
    """The tool's name and its ``function`` block; raises ``ToolShapeError`` for any other shape."""
    if not isinstance(tool, dict):
        raise ToolShapeError("?", "", f"a tool must be an object, got {type(tool).__name__}")
    function = tool.get("function")
    name = function.get("name") if isinstance(function, dict) else None
    if tool.get("type") != "function" or not isinstance(function, dict) or not isinstance(name, str) or not name:
        raise ToolShapeError(
            str(name) if isinstance(name, str) else "?",
            "",
            'expected {"type": "function", "function": {"name": ..., "parameters": {...}}}',
        )
    return name, function


def tool_parameters(tool: Any) -> tuple[str, dict[str, Any] | None]:
    """The tool's name and its parameters schema (``None`` for a tool that takes no parameters)."""
    name, function = tool_function(tool)
    params = function.get("parameters")
    if params is None:
        return name, None
    if not isinstance(params, dict):
        raise ToolShapeError(name, "", f"function.parameters must be an object, got {type(params).__name__}")
    return name, params


def json_pointer(path: SchemaPath) -> str:
    """RFC 6901 pointer for ``path``, relative to the parameters schema."""
    return "".join("/" + str(seg).replace("~", "~0").replace("/", "~1") for seg in path)


def iter_subschemas(node: dict[str, Any]) -> Iterator[tuple[SchemaPath, Any]]:
    """Every immediate subschema of ``node`` with its relative path; data keywords are skipped."""
    return iter(subschemas(node))


def subschemas(node: dict[str, Any]) -> list[tuple[SchemaPath, Any]]:
    """``iter_subschemas`` as a list (what a walk needs, without a generator per node)."""
    found: list[tuple[SchemaPath, Any]] = []
    for key, value in node.items():
        if key in SCHEMA_MAP_KEYWORDS and isinstance(value, dict):
            found += [((key, name), sub) for name, sub in value.items()]
        elif (key in SCHEMA_LIST_KEYWORDS or key == "items") and isinstance(value, list):
            found += [((key, index), sub) for index, sub in enumerate(value)]
        elif key in SCHEMA_SINGLE_KEYWORDS:
            found.append(((key,), value))
        elif key == "dependencies" and isinstance(value, dict):
            # draft-7 dependencies: a list of names is data, an object is a subschema
            found += [((key, name), sub) for name, sub in value.items() if isinstance(sub, dict)]
    return found


_SCALARS = frozenset({str, int, float, bool, type(None)})


def json_copy(value: Any) -> Any:
    """A deep copy of JSON-shaped data, made in C (a pickle round trip) where ``copy.deepcopy``
    walks it in Python; scalars are immutable and come back as they are."""
    if value is None or isinstance(value, (str, int, float)):
        return value
    if type(value) is list:
        # a flat list of scalars (``required``, ``enum``) is copied without the round trip
        for item in value:
            if type(item) not in _SCALARS:
                break
        else:
            return value.copy()
    import pickle  # here, not at the top: compiling imports this module and never copies a schema

    return pickle.loads(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))


def map_subschemas(
    node: dict[str, Any], fn: Callable[[Any, SchemaPath], Any], *, copy_data: bool = True
) -> dict[str, Any]:
    """A new ``node`` with ``fn(sub, relative_path)`` applied to every immediate subschema.

    Data keywords are deep-copied (taken as they are with ``copy_data=False``, for a ``node``
    the caller already owns), never walked: a ``default`` or ``examples`` value that looks like
    a schema is still the user's data.
    """
    copy = json_copy if copy_data else _same
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in SCHEMA_MAP_KEYWORDS and isinstance(value, dict):
            out[key] = {name: fn(sub, (key, name)) for name, sub in value.items()}
        elif (key in SCHEMA_LIST_KEYWORDS or key == "items") and isinstance(value, list):
            out[key] = [fn(sub, (key, index)) for index, sub in enumerate(value)]
        elif key in SCHEMA_SINGLE_KEYWORDS:
            out[key] = fn(value, (key,))
        elif key == "dependencies" and isinstance(value, dict):
            out[key] = {
                name: fn(sub, (key, name)) if isinstance(sub, dict) else copy(sub)
                for name, sub in value.items()
            }
        else:
            out[key] = copy(value)
    return out


def _same(value: Any) -> Any:
    return value


def walk_schemas(root: Any, path: SchemaPath = ()) -> Iterator[tuple[SchemaPath, dict[str, Any]]]:
    """Every object-valued schema under ``root`` (itself included), depth first, with its path."""
    if not isinstance(root, dict):
        return
    # one loop over a stack rather than a generator per level; children are pushed last-first
    # so they come out in document order, each subtree before its next sibling
    stack: list[tuple[SchemaPath, dict[str, Any]]] = [(path, root)]
    while stack:
        at, node = stack.pop()
        yield at, node
        children = [(at + rel, sub) for rel, sub in subschemas(node) if isinstance(sub, dict)]
        children.reverse()
        stack += children


def re2_incompatible(pattern: str) -> bool:
    """Whether ``pattern`` uses a lookaround or a numbered backreference, which RE2 refuses.

    Escapes and character classes are honoured, so ``\\(?=`` (a literal paren) and ``[(?!]``
    (a class of three characters) are compatible, while ``(?!x)`` and ``(a)\\1`` are not.
    """
    i, n, in_class = 0, len(pattern), False
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            if not in_class and i + 1 < n and pattern[i + 1] in "123456789":
                return True
            i += 2
            continue
        if in_class:
            if pattern.startswith("[:", i):
                end = pattern.find(":]", i + 2)
                i = end + 2 if end >= 0 else i + 1
                continue
            if ch == "]":
                in_class = False
            i += 1
            continue
        if ch == "[":
            in_class = True
            i += 1
            # a ']' right after '[' or '[^' is a literal member, not the end of the class
            if i < n and pattern[i] == "^":
                i += 1
            if i < n and pattern[i] == "]":
                i += 1
            continue
        if pattern.startswith(("(?=", "(?!", "(?<=", "(?<!"), i):
            return True
        i += 1
    return False
