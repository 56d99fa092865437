"""``strict``: the sanitiser for routes whose tool-schema validators reject parts of JSON Schema.

It preserves information by default and fails loudly on hazards. Only these rewrites happen,
each because a strict validator (GPT-5, xAI Grok, Qwen-strict) breaks on the original:

* ``$ref`` is inlined per tool and ``$defs`` removed; a recursive ``$ref`` raises
  ``SchemaRefCycleError`` (subclasses override ``inline_refs_in_tool`` to tolerate cycles);
* Pydantic's Decimal idiom ``anyOf: [{type: number}, {type: string, pattern}]`` collapses to
  ``{type: number}`` (the pattern is a lookahead that RE2 validators answer with a 500). Every
  other ``anyOf`` is kept;
* a typed dict-map becomes an array of ``{key, …value fields}`` entries, which the
  ``array_dict_map`` response policy turns back into the map;
* a ``pattern`` with a lookaround or backreference is removed (only such patterns);
* the parameters root ``description`` (Pydantic's class docstring) is removed.

Everything else is copied verbatim: ``title``, ``examples``, ``format``, bounds, enums,
defaults, ``additionalProperties: true/false``, safe patterns, unknown keywords. The walk knows
keyword positions from property-name positions, so a property named ``title`` is a property.
The output is then checked (``SchemaInvariantError``): every ``required`` name is a property,
no ``$ref`` survived, (when patterns are stripped) no RE2-incompatible regex remains, and a tool
that asks for strict mode (``strict: true``) has ``additionalProperties: false`` and every
property required on each object, and no ``allOf`` or ``default`` anywhere, as strict validators
demand (a probe of OpenAI's route found both refused; see ``STRICT_REFUSED_KEYWORDS``).
"""

from __future__ import annotations

import inspect
import marshal
from collections.abc import Callable
from typing import Any, ClassVar

from capplan.core.input_limits import MAX_NESTING, MAX_REF_DEPTH, MAX_SCHEMA_NODES
from capplan.core.reference_mode import reference_mode
from capplan.executor.policies.dict_maps import (
    dict_map_to_entries,
    has_object_fields,
    local_ref_name,
    tool_defs,
    typed_dict_map_value,
)
from capplan.executor.policies.schema_sanitizer import (
    SCHEMA_LIST_KEYWORDS,
    SCHEMA_MAP_KEYWORDS,
    SCHEMA_SINGLE_KEYWORDS,
    SchemaCapability,
    SchemaInvariantError,
    SchemaPath,
    SchemaRefCycleError,
    SchemaRefError,
    SchemaRewriteError,
    ToolSchemaSanitizer,
    json_copy,
    json_pointer,
    map_subschemas,
    re2_incompatible,
    tool_function,
    tool_parameters,
    walk_schemas,
)

#: Called when a ``$ref`` re-enters a definition on the current inlining path, with the ref,
#: the chain of definition names (ending in the re-entered one) and the ref's position. It
#: returns the schema to put there, or raises.
CycleHandler = Callable[[str, tuple[str, ...], SchemaPath], Any]

# Pydantic's Decimal idiom: the number branch may carry numeric bounds; the string branch is a
# bare patterned string. Anything else in either branch means it is some other union.
_DECIMAL_NUMBER_KEYS = frozenset({"type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})
_DECIMAL_STRING_KEYS = frozenset({"type", "pattern"})

_ABSENT = object()

# Keywords of a discriminated-union branch that flattening knows how to merge.
_BRANCH_MERGED_KEYS = frozenset({"type", "properties", "required", "title", "description"})


def inline_tool_refs(tool: dict[str, Any], *, on_cycle: CycleHandler) -> dict[str, Any]:
    """A copy of ``tool`` with every local ``$ref`` in its parameters inlined and ``$defs`` dropped.

    Refs resolve against the tool's own parameter-level ``$defs`` (or ``definitions``). A ref's
    sibling keywords (a field's ``description``, say) override the definition's. A diamond (one
    definition reached on two branches) is inlined on each; only re-entering a definition that
    is already being inlined on the current path is a cycle, and goes to ``on_cycle``.
    """
    name, params = tool_parameters(tool)
    if params is None:
        copied: dict[str, Any] = json_copy(tool)
        return copied
    defs = tool_defs(params)
    body = {k: v for k, v in params.items() if k not in ("$defs", "definitions")}
    inlined = copy_if_no_refs_within_limits(body)
    if inlined is None:
        inlined = _inline(body, defs, (), name, on_cycle, (), [0])
    # the walk builds the parameters afresh; everything else is copied in place, keys in order
    function = {k: inlined if k == "parameters" else json_copy(v) for k, v in tool["function"].items()}
    return {k: function if k == "function" else json_copy(v) for k, v in tool.items()}


#: Deepest keyword path a schema may reach while refs are inlined (two path segments per level).
MAX_SCHEMA_PATH = 2 * MAX_NESTING


#: marshal's type code for a dict (format 2 marks no shared or interned objects)
_MARSHAL_DICT = b"{"


def copy_if_no_refs_within_limits(body: dict[str, Any]) -> dict[str, Any] | None:
    """What the inlining walk makes of ``body`` when that is a plain deep copy, made in C; else None.

    The walk (``_inline``) copies a schema holding no ``$ref`` node for node, and raises only
    when the schema is deeper than ``MAX_SCHEMA_PATH`` or larger than ``MAX_SCHEMA_NODES``. This
    tells both cases apart from the schema's ``marshal`` bytes instead of walking it:

    * format 2 writes every object out in full, so the bytes spell the tree the walk would visit,
      and ``marshal.loads`` of them is the deep copy;
    * each dict in the tree writes one ``{`` type byte, and the count also takes in any ``{``
      inside a string, so it never undercounts the walk's nodes; each node adds at most two path
      segments, so ``2 * count <= MAX_SCHEMA_PATH`` and ``count <= MAX_SCHEMA_NODES`` prove the
      walk stays inside both limits (a count over them, even a false one, leaves the walk to
      decide and word its own error);
    * the bytes ``$ref`` anywhere (a key, or a string that merely contains it) send the schema to
      the walk.

    Measured on the tool list of ``benchmarks/executor_build.py`` (16 tools, 8 of them ref-free),
    the copy takes 9.7 µs where the walk takes 14.2 µs for those 8. None whenever the walk is needed,
    including a value marshal refuses (a subclass of a built-in type, nesting past marshal's own
    limit). The walk and this copy must agree on every input: a test compares them.

    Seam *marshal copy*: in the reference mode (:mod:`capplan.core.reference_mode`) this answers
    None, so every schema takes the walk, the plain copy.
    """
    if reference_mode():
        return None
    try:
        data = marshal.dumps(body, 2)
    except ValueError:
        return None
    nodes = data.count(_MARSHAL_DICT)
    if b"$ref" in data or 2 * nodes > MAX_SCHEMA_PATH or nodes > MAX_SCHEMA_NODES:
        return None
    copied: dict[str, Any] = marshal.loads(data)
    return copied


#: Keywords that hold subschemas, and those at which ``StrictSchema._rewrite`` changes a node
#: (the Decimal idiom, patterns, a discriminated union, a typed dict-map).
_REWRITE_KEYWORDS = frozenset(
    {*SCHEMA_MAP_KEYWORDS, *SCHEMA_LIST_KEYWORDS, *SCHEMA_SINGLE_KEYWORDS, "dependencies",
     "anyOf", "pattern", "oneOf", "discriminator", "additionalProperties"}
)


#: Keywords ``_inline`` walks into or resolves.
_INLINE_KEYWORDS = frozenset(
    {*SCHEMA_MAP_KEYWORDS, *SCHEMA_LIST_KEYWORDS, *SCHEMA_SINGLE_KEYWORDS, "dependencies", "$ref"}
)


def _inline(
    node: Any,
    defs: dict[str, Any],
    active: tuple[str, ...],
    tool: str,
    on_cycle: CycleHandler,
    path: SchemaPath,
    produced: list[int],
) -> Any:
    if not isinstance(node, dict):
        return json_copy(node)
    # refs fan out (a definition used twice, each using the next twice …), so the output is
    # bounded as it is built rather than measured after
    produced[0] += 1
    if produced[0] > MAX_SCHEMA_NODES:
        raise SchemaRewriteError(tool, json_pointer(path), f"inlining $refs grows the schema past "
                                 f"{MAX_SCHEMA_NODES} subschemas; is a definition fanned out exponentially?")
    if len(active) > MAX_REF_DEPTH or len(path) > MAX_SCHEMA_PATH:
        raise SchemaRewriteError(tool, json_pointer(path)[:200], f"nested deeper than {MAX_REF_DEPTH} $refs or "
                                 f"{MAX_SCHEMA_PATH // 2} schema levels")

    if node.keys().isdisjoint(_INLINE_KEYWORDS):
        # a leaf: nothing to walk into, only data to copy
        return {key: json_copy(value) for key, value in node.items()}

    def recurse(sub: Any, rel: SchemaPath) -> Any:
        return _inline(sub, defs, active, tool, on_cycle, path + rel, produced)

    if "$ref" not in node:
        return map_subschemas(node, recurse)
    ref = node["$ref"]
    where = json_pointer(path)
    def_name = local_ref_name(ref) if isinstance(ref, str) else None
    if def_name is None:
        raise SchemaRefError(tool, where, f"$ref {ref!r} is not a local '#/$defs/<name>' reference")
    siblings = map_subschemas({k: v for k, v in node.items() if k != "$ref"}, recurse)
    if def_name in active:
        target = on_cycle(ref, (*active, def_name), path)
    elif def_name not in defs:
        raise SchemaRefError(tool, where, f"$ref {ref!r} names no definition; defined: {sorted(defs)}")
    else:
        target = _inline(defs[def_name], defs, (*active, def_name), tool, on_cycle, path, produced)
    if not isinstance(target, dict):
        if siblings:
            raise SchemaRefError(
                tool, where, f"$ref {ref!r} is a boolean schema; its sibling keywords have nowhere to go"
            )
        return target
    return {**target, **siblings}


def is_decimal_idiom(node: dict[str, Any]) -> bool:
    """Whether ``node`` is exactly Pydantic's Decimal ``anyOf`` (a number, or a patterned string)."""
    branches = node.get("anyOf")
    if not isinstance(branches, list) or len(branches) != 2 or not all(isinstance(b, dict) for b in branches):
        return False
    numbers = [b for b in branches if b.get("type") == "number" and set(b) <= _DECIMAL_NUMBER_KEYS]
    strings = [
        b
        for b in branches
        if b.get("type") == "string" and isinstance(b.get("pattern"), str) and set(b) <= _DECIMAL_STRING_KEYS
    ]
    return len(numbers) == 1 and len(strings) == 1


def _collapse_decimal(node: dict[str, Any]) -> dict[str, Any]:
    number = next(b for b in node["anyOf"] if b.get("type") == "number")
    bounds = {k: v for k, v in number.items() if k != "type"}
    siblings = {k: v for k, v in node.items() if k not in ("anyOf", "type")}
    return {"type": "number", **bounds, **siblings}


class StrictSchema(ToolSchemaSanitizer):
    """The position-aware sanitiser for strict tool-schema validators (see the module docstring).

    Subclasses tune it through six class attributes and one classmethod hook,
    ``inline_refs_in_tool``; everything else is fixed.

    A dict-map whose values contribute no fields (``Dict[str, int]``, a union value) has no
    entry form unless ``carry_scalar_dict_map_value`` carries the whole value under
    ``VALUE_FIELD``; without it the map is left as declared rather than sent as key-only
    entries, which would lose every value. Carrying is the default here, unlike tolokaforge's
    (docs/deviations.md says why): a strict validator then sees entries it can check, the
    value keeps its type, and every response policy that pivots entries back
    (``array_dict_map`` and its subclasses) turns ``{key, value}`` into the bare value.

    Converted maps say how to fill them: the key field and a carried value field get a short
    description when they have none, and a map that has a description gets ``ENTRIES_HINT``
    appended, so the model is told the wire shape it must answer in.
    """

    name: ClassVar[str] = "strict"

    #: Name of the synthetic field holding the map key in a dict-map entry.
    KEY_FIELD: ClassVar[str] = "key"
    #: Name of the synthetic field holding a carried (fieldless) value in a dict-map entry.
    VALUE_FIELD: ClassVar[str] = "value"
    #: Carry fieldless dict-map values whole under ``VALUE_FIELD`` (reversed by ``array_dict_map``).
    carry_scalar_dict_map_value: ClassVar[bool] = True
    #: Description given to the synthetic key field when it has none.
    KEY_DESCRIPTION: ClassVar[str] = "The map key identifier."
    #: Description given to a carried value when it has none.
    VALUE_DESCRIPTION: ClassVar[str] = "The map value."
    #: Appended to a converted map's own description ({key} is ``KEY_FIELD``).
    ENTRIES_HINT: ClassVar[str] = "Provide as a JSON array of objects, each with a '{key}' field as the identifier."
    #: Flatten ``oneOf`` + ``discriminator`` unions into one object (for routes that ignore ``oneOf``).
    flatten_oneof_discriminator: ClassVar[bool] = False
    #: Remove the parameters root ``description`` (Pydantic's class docstring, redundant here).
    strip_parameters_root_description: ClassVar[bool] = True
    #: Remove ``pattern`` values with lookarounds or backreferences (RE2 validators refuse them).
    strip_re2_incompatible_patterns: ClassVar[bool] = True

    #: Whether this class's ``inline_refs_in_tool`` is known to leave its argument untouched:
    #: worked out for every subclass below, never set by a subclass author.
    _pure_inline_hook: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # the hook defined here, and those capplan ships (each calls inline_tool_refs; a test checks
        # every registered sanitiser leaves its input alone), get the caller's tool as it is; a hook
        # defined anywhere else is not trusted to, and is handed a copy
        cls._pure_inline_hook = _shipped(inspect.getattr_static(cls, "inline_refs_in_tool"))
        # a misconfigured subclass would emit entries no response policy can read back
        if not cls.KEY_FIELD or not cls.VALUE_FIELD or cls.KEY_FIELD == cls.VALUE_FIELD:
            raise TypeError(
                f"{cls.__qualname__}: KEY_FIELD and VALUE_FIELD must be distinct, non-empty names "
                f"(got {cls.KEY_FIELD!r}, {cls.VALUE_FIELD!r})"
            )

    def supported_capabilities(self) -> frozenset[SchemaCapability]:
        """Regex patterns and formats pass; typed dict-maps and the Decimal ``anyOf`` are rewritten."""
        return frozenset({SchemaCapability.REGEX_PATTERN, SchemaCapability.DATE_TIME_FORMAT})

    @classmethod
    def inline_refs_in_tool(cls, tool: dict[str, Any]) -> dict[str, Any]:
        """Inline the tool's ``$ref``s and drop its ``$defs``; a recursive ``$ref`` raises.

        The hook a subclass overrides to treat cycles differently (see ``inline_tool_refs``).
        """
        name, _ = tool_parameters(tool)

        def refuse(ref: str, chain: tuple[str, ...], path: SchemaPath) -> Any:
            raise SchemaRefCycleError(name, json_pointer(path), chain)

        return inline_tool_refs(tool, on_cycle=refuse)

    def sanitize(self, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Sanitise every tool; raises a ``ToolSchemaError`` subclass naming the tool and position."""
        return [self._bounded(tool) for tool in tools]

    def _bounded(self, tool: dict[str, Any]) -> dict[str, Any]:
        try:
            return self._sanitize_tool(tool)
        except RecursionError:
            # a schema deeper than the copy itself can go (request files stop at the nesting limit first)
            name = tool_function(tool)[0] if isinstance(tool, dict) else "?"
            raise SchemaRewriteError(name, "", f"nested deeper than {MAX_SCHEMA_PATH // 2} schema levels") from None

    def _sanitize_tool(self, tool: dict[str, Any]) -> dict[str, Any]:
        name, _ = tool_parameters(tool)
        # the hook is overridable: unless it is known to leave its argument alone, the caller's
        # dict is protected here rather than trusted to it
        inlined = type(self).inline_refs_in_tool(tool if self._pure_inline_hook else json_copy(tool))
        _, params = tool_parameters(inlined)
        if params is None:
            return inlined
        # the inlined parameters are this call's own copy, so the rewrite takes their data as it is
        rewritten = self._rewrite(params, name, ())
        if self.strip_parameters_root_description:
            rewritten.pop("description", None)
        inlined["function"]["parameters"] = rewritten
        self.validate_invariants(inlined)
        return inlined

    def _rewrite(self, node: Any, tool: str, path: SchemaPath) -> Any:
        if not isinstance(node, dict):
            return node
        if node.keys().isdisjoint(_REWRITE_KEYWORDS):
            # no subschema and no keyword any rewrite starts at: it would come out equal, and
            # the node is this call's own (inlined) copy
            return node
        # before the walk: the pattern that identifies the idiom is stripped on the way down
        if is_decimal_idiom(node):
            node = _collapse_decimal(node)
        out = map_subschemas(node, lambda sub, rel: self._rewrite(sub, tool, path + rel), copy_data=False)
        pattern = out.get("pattern")
        if self.strip_re2_incompatible_patterns and isinstance(pattern, str) and re2_incompatible(pattern):
            del out["pattern"]
        if self.flatten_oneof_discriminator and isinstance(out.get("oneOf"), list) and "discriminator" in out:
            out = self._flatten_discriminated_union(out, tool, path)
        value = typed_dict_map_value(out)
        # the parameters root must stay an object, whatever it declares
        if value is not None and path:
            out = self._dict_map_to_entries(out, value, tool, path)
        return out

    def _flatten_discriminated_union(self, node: dict[str, Any], tool: str, path: SchemaPath) -> dict[str, Any]:
        """One object with every branch's properties; the discriminator becomes an ``enum``.

        ``required`` is the intersection of the branches' (so usually just the discriminator),
        plus whatever the union itself requires. A property two branches declare differently
        becomes an ``anyOf`` of the distinct declarations rather than one of them winning, and
        branch descriptions survive in the discriminator's description, keyed by its value.
        """
        where = json_pointer(path)
        disc = node["discriminator"]
        prop = disc.get("propertyName") if isinstance(disc, dict) else disc
        if not isinstance(prop, str) or not prop:
            raise SchemaRewriteError(tool, where, f"discriminator {disc!r} names no propertyName")
        own = node.get("properties")
        declared: dict[str, list[Any]] = {
            k: [v] for k, v in (own.items() if isinstance(own, dict) else ()) if k != prop
        }
        tag_decls: list[dict[str, Any]] = []
        tags: list[Any] = []
        notes: list[str] = []
        required_sets: list[list[str]] = []
        shared: dict[str, Any] | None = None
        for index, branch in enumerate(node["oneOf"]):
            at = f"{where}/oneOf/{index}"
            props = branch.get("properties") if isinstance(branch, dict) else None
            if not isinstance(props, dict) or branch.get("type", "object") != "object":
                raise SchemaRewriteError(tool, at, "a discriminated-union branch must be an object with properties")
            values = _tag_values(props.get(prop))
            if values is None:
                raise SchemaRewriteError(tool, at, f"branch declares no const/enum for discriminator {prop!r}")
            tag_decls.append(props[prop])
            tags.extend(v for v in values if v not in tags)
            if isinstance(branch.get("description"), str):
                notes.append(f"{', '.join(map(str, values))}: {branch['description']}")
            extra = {k: v for k, v in branch.items() if k not in _BRANCH_MERGED_KEYS}
            if shared is None:
                shared = extra
            elif extra != shared:
                differing = sorted(k for k in {*extra, *shared} if extra.get(k, _ABSENT) != shared.get(k, _ABSENT))
                raise SchemaRewriteError(tool, at, f"branches disagree on {differing}; flattening would lose one side")
            required_sets.append([r for r in branch.get("required", []) if isinstance(r, str)])
            for key, value in props.items():
                seen = declared.setdefault(key, []) if key != prop else None
                if seen is not None and value not in seen:
                    seen.append(value)
        if not required_sets:
            raise SchemaRewriteError(tool, where, "a discriminated union with no branches cannot be flattened")
        properties: dict[str, Any] = {prop: _merged_tag(tag_decls, tags, notes)}
        properties.update({k: v[0] if len(v) == 1 else {"anyOf": v} for k, v in declared.items()})
        common = [r for r in required_sets[0] if all(r in names for names in required_sets[1:])]
        own_required = [r for r in node.get("required", []) if isinstance(r, str)]
        required = own_required + [r for r in common if r not in own_required]
        skip = ("oneOf", "discriminator", "type", "properties", "required")
        out = {"type": "object", **{k: v for k, v in node.items() if k not in skip}}
        out.update(properties=properties, **(shared or {}))
        if required:
            out["required"] = required
        return out

    def _dict_map_to_entries(
        self, node: dict[str, Any], value: dict[str, Any], tool: str, path: SchemaPath
    ) -> dict[str, Any]:
        key_field, value_field = self.KEY_FIELD, self.VALUE_FIELD
        key_schema: dict[str, Any] = {"type": "string"}
        names = node.get("propertyNames")
        if isinstance(names, dict):
            # key constraints (pattern, enum, length) now constrain the key field
            key_schema.update({k: v for k, v in names.items() if k != "type"})
        key_schema.setdefault("description", self.KEY_DESCRIPTION)
        carried: str | None
        if has_object_fields(value):
            fields = value["properties"]
            if key_field in fields:
                raise SchemaRewriteError(
                    tool,
                    json_pointer(path),
                    f"dict-map values already have a field named {key_field!r}, so entries cannot carry the key there",
                )
            extra = {k: v for k, v in value.items() if k not in ("type", "properties", "required")}
            value_required = [r for r in value.get("required", []) if isinstance(r, str)]
            items = {
                "type": "object",
                "properties": {key_field: key_schema, **fields},
                "required": [key_field, *value_required],
                **extra,
            }
            carried = None
        elif self.carry_scalar_dict_map_value:
            items = {
                "type": "object",
                "properties": {key_field: key_schema, value_field: {**value, "description": value.get(
                    "description", self.VALUE_DESCRIPTION)}},
                "required": [key_field, value_field],
            }
            carried = value_field
        else:
            return node
        out: dict[str, Any] = {"type": "array", "items": items}
        for key, declared in node.items():
            if key in ("type", "additionalProperties", "propertyNames"):
                continue
            if key in ("minProperties", "maxProperties"):
                out[key.replace("Properties", "Items")] = declared
            elif key == "default":
                entries = dict_map_to_entries(declared, key_field=key_field, value_field=carried)
                out[key] = declared if entries is None else entries
            elif key == "examples" and isinstance(declared, list):
                converted = [dict_map_to_entries(e, key_field=key_field, value_field=carried) for e in declared]
                out[key] = declared if any(c is None for c in converted) else converted
            else:
                out[key] = declared
        if isinstance(out.get("description"), str) and out["description"]:
            out["description"] = f"{out['description']} {self.ENTRIES_HINT.format(key=key_field)}"
        return out

    def validate_invariants(self, tool: dict[str, Any]) -> None:
        """Raise ``SchemaInvariantError`` at the first structural defect in a sanitised tool.

        Every object schema's ``required`` names are among its ``properties``; no ``$ref``
        survived inlining; and, when this sanitiser strips them, no RE2-incompatible regex is
        left in a ``pattern`` or a ``patternProperties`` name.
        """
        name, params = tool_parameters(tool)
        if params is None:
            return
        # a tool that asks for strict mode is held to what strict validators refuse (conformance
        # rules openai.strict_additional_properties / openai.strict_required): refusing it here
        # names the place, where the provider would answer one 400 for the first defect it met
        strict = isinstance(tool.get("function"), dict) and tool["function"].get("strict") is True
        for path, node in walk_schemas(params):
            if strict:
                _check_strict_object(name, path, node)
            if "$ref" in node:
                raise SchemaInvariantError(name, json_pointer(path), f"$ref {node['$ref']!r} survived inlining")
            required = node.get("required")
            if required is not None and ("properties" in node or node.get("type") == "object"):
                props = node.get("properties")
                declared = set(props) if isinstance(props, dict) else set()
                if not isinstance(required, list):
                    raise SchemaInvariantError(name, json_pointer(path), f"required must be a list of names, got {required!r}")
                missing = [r for r in required if r not in declared]
                if missing:
                    raise SchemaInvariantError(
                        name, json_pointer(path), f"required names {missing} are not among its properties {sorted(declared)}"
                    )
            if not self.strip_re2_incompatible_patterns:
                continue
            pattern = node.get("pattern")
            if isinstance(pattern, str) and re2_incompatible(pattern):
                raise SchemaInvariantError(name, json_pointer(path), f"RE2-incompatible pattern {pattern!r} remains")
            pattern_props = node.get("patternProperties")
            for regex in pattern_props if isinstance(pattern_props, dict) else ():
                if re2_incompatible(regex):
                    raise SchemaInvariantError(
                        name, json_pointer(path), f"patternProperties name {regex!r} is a regex RE2 cannot compile"
                    )


#: keywords a strict function's schema may not use anywhere (conformance rules
#: openai.strict_keyword_not_permitted / responses.strict_keyword_not_permitted: "In context=(...),
#: 'allOf' is not permitted."), each with how to do without it
STRICT_REFUSED_KEYWORDS: dict[str, str] = {
    "allOf": "merge its branches into this schema (one object with every property)",
    "default": "remove it and state the default in the description (a strict call sends every field)",
}


def _check_strict_object(tool: str, path: SchemaPath, node: dict[str, Any]) -> None:
    """Strict mode's rules: no refused keyword, ``additionalProperties: false``, every property required."""
    for keyword, fix in STRICT_REFUSED_KEYWORDS.items():
        if keyword in node:
            raise SchemaInvariantError(
                tool, json_pointer(path),
                f"the tool asks for strict mode (strict: true), whose validators refuse {keyword!r}; {fix}, "
                "or drop strict: true from the tool")
    if node.get("type") != "object" and "properties" not in node:
        return
    if node.get("additionalProperties") is not False:
        raise SchemaInvariantError(
            tool, json_pointer(path),
            "the tool asks for strict mode (strict: true), which needs additionalProperties: false on every object; "
            "add it here, or drop strict: true from the tool")
    props = node.get("properties")
    required = node.get("required")
    missing = sorted(set(props) - set(required if isinstance(required, list) else ())) if isinstance(props, dict) else []
    if missing:
        raise SchemaInvariantError(
            tool, json_pointer(path),
            f"the tool asks for strict mode (strict: true), which needs every property in required; missing {missing} "
            "(an optional one is required with a null-able type), or drop strict: true from the tool")


def _shipped(hook: Any) -> bool:
    """Whether ``hook`` (a classmethod, as found on the class) is defined in capplan itself."""
    function = getattr(hook, "__func__", None)
    return (getattr(function, "__module__", None) or "").startswith("capplan.")


def _merged_tag(decls: list[dict[str, Any]], tags: list[Any], notes: list[str]) -> dict[str, Any]:
    types = {d.get("type") for d in decls}
    merged: dict[str, Any] = {"type": types.pop()} if len(types) == 1 and None not in types else {}
    merged.update({k: v for k, v in decls[0].items() if k not in ("const", "enum", "type")})
    merged["enum"] = tags
    if notes:
        own = merged.get("description")
        merged["description"] = "\n".join(([own] if isinstance(own, str) else []) + notes)
    return merged


def _tag_values(tag: Any) -> list[Any] | None:
    if not isinstance(tag, dict):
        return None
    if "const" in tag:
        return [tag["const"]]
    enum_values = tag.get("enum")
    if isinstance(enum_values, list) and enum_values:
        return list(enum_values)
    return None
