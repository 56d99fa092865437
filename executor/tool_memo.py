"""Sanitised tools, memoised on the tool list, and the bounded memos a request builder keeps.

A trial sends the same tool list on every turn, and sanitising it (``$ref`` inlining, dict-map
rewrites, invariant checks) plus compiling its validators costs far more than recognising it. The
memo is keyed twice: first by the identity of the caller's tool objects (a trial hands the same
validated ``ToolSpec`` instances to every turn, so recognising them costs a tuple of ids), then by
a digest of the list's content (equal lists made afresh share an entry).

A new client's first list is read straight off the validated ``ToolSpec`` objects: the declared
tool dicts are built around each tool's own ``parameters`` (no serialise-and-parse round trip), and
each schema's content key is its ``marshal`` bytes, made in C. Every build hands out the same
sanitised list, to be treated as read-only: on a route whose sanitiser rewrites nothing it *is*
the declared list, sharing the caller's parameter dicts, as the engine this replaces shares the
caller's list. Nothing in the request path edits it (policies copy what they mark), and
``Client.generate`` hands the provider call a deep copy, so neither a transport nor a later
request can reach the caller's objects. Whether a sanitised schema is a valid JSON Schema, and
whether declared parameters are plain JSON data, is checked once per distinct schema in the
process, not once per client (``CHECKED_SCHEMAS``, ``PLAIN_PARAMETERS``; ``clear_tool_caches``
forgets them).

``BoundedMemo`` and ``PerToolObjects`` are the request builder's own memos (per system prompt and
tool objects, per request settings), kept here so that the builder reads as its steps.

Seam *tool memo*: a memo hit costs a twentieth of a first build or less (``benchmarks/executor_build.py``
prints the speed-up, target >= 20x). In the reference mode (:mod:`capplan.core.reference_mode`)
nothing here remembers anything: every list is serialised, parsed, sanitised and checked afresh,
on every build.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from jsonschema import SchemaError, validators
from pydantic import TypeAdapter

from capplan.core.reference_mode import reference_mode
from capplan.executor.policies.schema_sanitizer import ToolSchemaError
from capplan.executor.plain_validity import QuickValidator, quick_check

if TYPE_CHECKING:
    from capplan.executor.messages import ToolSpec

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class InvalidToolSchemaError(ToolSchemaError):
    """A tool's sanitised parameters are not a valid JSON Schema, so the model would be shown garbage.

    Its base is the sanitiser slot's error, so callers handle one type for every schema refusal.
    """


def tools_json(tools: list[dict[str, Any]]) -> bytes:
    """Compact JSON of a tool list given as dicts (``ChatRequest.tools_json`` is the fast path)."""
    return json.dumps(tools, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def content_key(value: Any) -> bytes:
    """A key for JSON-shaped ``value`` by its content: its ``marshal`` bytes, made in C.

    marshal is a faithful encoding of exact built-in types (it refuses subclasses with
    ``ValueError``), so equal keys mean equal data of equal types: ``1``, ``1.0`` and ``True`` or
    a list and a tuple never share a key. Equal data may get different keys (the current format
    marks interned strings and objects referenced more than once), which costs a repeated check,
    never a skipped one; it is the fastest format, which is what a first build needs.
    """
    return marshal.dumps(value)


_PARAMETERS: TypeAdapter[dict[str, Any]] = TypeAdapter(dict[str, Any])


def _plain_json(parameters: dict[str, Any]) -> bool:
    """Whether ``parameters`` survive the request's JSON serialisation unchanged (no tuples, NaN,
    non-string keys, bytes …), so handing them on as they are equals serialising and parsing them."""
    try:
        return bool(json.loads(_PARAMETERS.dump_json(parameters, warnings=False)) == parameters)
    except Exception:  # anything the serialiser refuses goes the serialising way, which reports it
        return False


class PreparedTools:
    """One tool list after sanitisation, with what response parsing needs from it.

    The sanitised list is built once and shared by every request built with these tools
    (read-only by contract). Validators and parameter types serve response parsing only, so
    they are made on first use rather than on the first build.
    """

    def __init__(
        self,
        digest: str | Callable[[], str],
        declared: list[dict[str, Any]],
        sanitized: list[dict[str, Any]],
        schemas: Mapping[str, dict[str, Any]],
        param_types: Callable[[list[dict[str, Any]]], Mapping[str, Mapping[str, str]]],
    ) -> None:
        # a digest is made only once there is another list to tell this one from
        self._digest = digest
        self.schemas = schemas
        self._declared = declared
        self._sanitized = sanitized
        self._param_types_of = param_types
        self._lock = threading.Lock()
        self._validators: Mapping[str, Any] | None = None
        self._param_types: Mapping[str, Mapping[str, str]] | None = None

    @property
    def digest(self) -> str:
        """A digest of the declared list's content."""
        with self._lock:
            if not isinstance(self._digest, str):
                self._digest = self._digest()
            return self._digest

    @property
    def declared_json(self) -> bytes:
        """The declared list as compact JSON bytes."""
        return tools_json(self._declared)

    @property
    def sanitized_json(self) -> str:
        """The sanitised list as JSON text."""
        return json.dumps(self._sanitized, ensure_ascii=False)

    def sanitized(self) -> list[dict[str, Any]]:
        """A fresh copy of the sanitised tool list."""
        result: list[dict[str, Any]] = json.loads(self.sanitized_json)
        return result

    def shared(self) -> list[dict[str, Any]]:
        """The sanitised list every build hands out: read it, never edit it."""
        return self._sanitized

    def declared(self) -> list[dict[str, Any]]:
        """A fresh copy of the tool list as the caller declared it."""
        result: list[dict[str, Any]] = json.loads(self.declared_json)
        return result

    def declared_shared(self) -> list[dict[str, Any]]:
        """The declared list, shared (policies read their inputs, never edit them)."""
        return self._declared

    @property
    def validators(self) -> Mapping[str, Any]:
        """A compiled validator per tool name, for the arguments a response carries."""
        with self._lock:
            if self._validators is None:
                self._validators = {
                    name: QuickValidator(validators.validator_for(schema, default=validators.Draft202012Validator)(schema),
                                         quick_check(schema))
                    for name, schema in self.schemas.items()
                }
            return self._validators

    @property
    def param_types(self) -> Mapping[str, Mapping[str, str]]:
        """Root parameter name -> declared type, per tool (declared, not sanitised: only the
        declaration tells a dict-map from a genuine array)."""
        with self._lock:
            if self._param_types is None:
                self._param_types = self._param_types_of(self._declared)
            return self._param_types


class _KnownContent:
    """Content keys with a settled verdict (a pure function of the content); bounded LRU, thread-safe."""

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._seen: OrderedDict[Hashable, None] = OrderedDict()
        self._lock = threading.Lock()

    def unknown(self, keys: Sequence[Hashable]) -> list[int]:
        """The positions of ``keys`` with no verdict yet (one lock for the whole list); all of them in the reference mode."""
        if reference_mode():
            return list(range(len(keys)))
        seen = self._seen
        missing = []
        with self._lock:
            for index, key in enumerate(keys):
                if key in seen:
                    seen.move_to_end(key)
                else:
                    missing.append(index)
        return missing

    def add(self, key: Hashable) -> None:
        if reference_mode():
            return
        with self._lock:
            self._seen[key] = None
            while len(self._seen) > self._size:
                self._seen.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._seen.clear()


class _CheckedSchemas:
    """Schemas already shown to be valid JSON Schema, by their content key; bounded, thread-safe.

    The key is the content alone: the metaschema a schema is checked against is chosen by its
    own ``$schema`` keyword, which is part of the content.
    """

    def __init__(self, size: int = 4096) -> None:
        self._known = _KnownContent(size)

    def clear(self) -> None:
        """Forget every schema checked so far."""
        self._known.clear()

    def check(self, schema: dict[str, Any], key: bytes | None = None) -> None:
        """Raise ``SchemaError`` unless ``schema`` is a valid JSON Schema (checked once per content).

        ``key`` is ``content_key(schema)`` when the caller has it already.
        """
        self.check_many([schema], [key], lambda index, exc: exc)

    def check_many(
        self,
        schemas: Sequence[dict[str, Any]],
        keys: Sequence[bytes | None],
        refused: Callable[[int, SchemaError], Exception],
    ) -> None:
        """``check`` for each schema (``keys`` in step, ``None`` where not made yet); the first invalid
        one raises ``refused(position, error)``."""
        known: list[Hashable] = []
        for schema, key in zip(schemas, keys):
            # key order is part of the key, not sorted away: equal schemas from one source come
            # out alike, and a differently ordered twin is merely checked once more
            if key is None:
                try:
                    key = content_key(schema)
                except ValueError:  # not marshal-able (a subclass of a built-in type): never known
                    known.append(object())
                    continue
            known.append(key)
        for index in self._known.unknown(known):
            schema = schemas[index]
            cls = validators.validator_for(schema, default=validators.Draft202012Validator)
            try:
                cls.check_schema(schema)
            except SchemaError as exc:
                raise refused(index, exc) from None
            self._known.add(known[index])


CHECKED_SCHEMAS = _CheckedSchemas()
#: content keys of declared parameters shown to be plain JSON data (see ``_plain_json``)
PLAIN_PARAMETERS = _KnownContent()


def clear_tool_caches() -> None:
    """Forget the process-wide verdicts on schemas and parameters (tests that count first-time work).

    Each client's own ``ToolMemo`` goes with the client; nothing else about tools outlives it.
    """
    CHECKED_SCHEMAS.clear()
    PLAIN_PARAMETERS.clear()


def _declared_from_specs(
    specs: Sequence[ToolSpec],
) -> tuple[Callable[[], str], list[dict[str, Any]], list[bytes]] | None:
    """The digest (made on demand), the declared tool dicts and each tool's parameters key, read
    off validated specs.

    The dicts are what ``json.loads(ChatRequest.tools_json())`` gives, key for key, with each
    tool's ``parameters`` shared rather than copied. ``None`` when some parameters are not plain
    JSON data: the list then takes the serialising way, which normalises (or refuses) them as
    before.
    """
    tools: list[dict[str, Any]] = []
    keys: list[bytes] = []
    try:
        for spec in specs:
            function = spec.function
            parameters = function.parameters
            keys.append(content_key(parameters))
            # the key order and the unset keys left out are those of the serialised ToolSpec
            wire: dict[str, Any] = {"name": function.name}
            if function.description is not None:
                wire["description"] = function.description
            wire["parameters"] = parameters
            if function.strict is not None:
                wire["strict"] = function.strict
            tools.append({"type": spec.type, "function": wire})
    except ValueError:  # a subclass of a built-in type in some parameters
        return None
    for index in PLAIN_PARAMETERS.unknown(keys):
        if not _plain_json(specs[index].function.parameters):
            return None
        PLAIN_PARAMETERS.add(keys[index])

    def digest() -> str:
        # format 0 marks neither interned nor shared objects: equal lists give equal bytes
        return "m" + hashlib.sha256(marshal.dumps(tools, 0)).hexdigest()

    return digest, tools, keys


class ToolMemo:
    """A bounded, thread-safe LRU of prepared tool lists, keyed by digest and by caller object identity.

    ``verbatim`` says the sanitiser rewrites nothing (``rewrites(sanitizer)`` is false, see schema_sanitizer):
    the declared list, already private to the memo or shared read-only with the caller's
    ``ToolSpec`` objects, is then the sanitised list, and ``sanitize`` is not called.
    """

    def __init__(
        self,
        sanitize: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
        param_types: Callable[[list[dict[str, Any]]], Mapping[str, Mapping[str, str]]],
        *,
        size: int = 64,
        verbatim: bool = False,
    ) -> None:
        self._sanitize = sanitize
        self._param_types = param_types
        self._size = size
        self._verbatim = verbatim
        self._entries: OrderedDict[str, PreparedTools] = OrderedDict()
        # the first list, until a second one needs telling apart from it
        self._pending: PreparedTools | None = None
        # id-tuple -> (the objects themselves, which keeps their ids from being reused; the entry)
        self._by_identity: OrderedDict[tuple[int, ...], tuple[tuple[object, ...], PreparedTools]] = OrderedDict()
        self._lock = threading.Lock()
        #: the reference mode: every list is prepared afresh from its JSON, nothing is remembered
        self._plain = reference_mode()

    def prepare_objects(self, tools: Sequence[ToolSpec], declared_json: Callable[[], bytes]) -> PreparedTools:
        """The prepared form of validated ``tools`` (immutable by contract), whose JSON ``declared_json`` gives.

        The same objects in the same order are recognised without reading them; anything else is
        read off the objects (``declared_json`` is called only for parameters that are not plain
        JSON data).
        """
        if self._plain:
            return self.prepare(declared_json())
        key = tuple(map(id, tools))
        with self._lock:
            hit = self._by_identity.get(key)
            if hit is not None:
                self._by_identity.move_to_end(key)
                return hit[1]
        read = _declared_from_specs(tools)
        if read is None:
            prepared = self.prepare(declared_json())
        else:
            digest, declared, keys = read
            prepared = self._lookup(digest, lambda: self._build(digest, declared, keys))
        with self._lock:
            self._by_identity[key] = (tuple(tools), prepared)
            while len(self._by_identity) > self._size:
                self._by_identity.popitem(last=False)
        return prepared

    def prepare(self, declared_json: bytes) -> PreparedTools:
        """The prepared form of the tool list serialised as ``declared_json``, computed once per distinct list.

        The key is the digest of the bytes: equal lists serialised in the same key order share an
        entry, and a list that differs in any byte (a caller edited a schema) is prepared afresh.
        """
        digest = hashlib.sha256(declared_json).hexdigest()
        if self._plain:
            return self._build(digest, json.loads(declared_json), None)
        # the parsed list is the memo's own: nobody else holds it
        return self._lookup(digest, lambda: self._build(digest, json.loads(declared_json), None))

    def _lookup(self, digest: str | Callable[[], str], build: Callable[[], PreparedTools]) -> PreparedTools:
        with self._lock:
            if not self._entries and self._pending is None and not isinstance(digest, str):
                # the memo's first list: there is nothing to tell it from, so no digest yet
                self._pending = prepared = build()
                return prepared
            pending, self._pending = self._pending, None
        if pending is not None:
            self._store(pending.digest, pending)
        digest = digest if isinstance(digest, str) else digest()
        with self._lock:
            hit = self._entries.get(digest)
            if hit is not None:
                self._entries.move_to_end(digest)
                return hit
        prepared = build()
        self._store(digest, prepared)
        return prepared

    def _store(self, digest: str, prepared: PreparedTools) -> None:
        with self._lock:
            self._entries[digest] = prepared
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)

    def _build(
        self, digest: str | Callable[[], str], tools: list[dict[str, Any]], keys: list[bytes] | None
    ) -> PreparedTools:
        # the slot's contract: sanitize never mutates its input, and raises ToolSchemaError
        # (SchemaInvariantError and kin) rather than return a schema it cannot vouch for
        verbatim = self._verbatim
        sanitized = tools if verbatim else self._sanitize(tools)
        names: list[str] = []
        schemas: list[dict[str, Any]] = []
        if verbatim and keys is not None:
            # read off specs: every tool has its name and parameters in place
            names = [tool["function"]["name"] for tool in tools]
            schemas = [tool["function"]["parameters"] for tool in tools]
        else:
            for tool in sanitized:
                function = tool.get("function", {})
                names.append(function.get("name"))
                schemas.append(function.get("parameters", {"type": "object", "properties": {}}))

        def refused(index: int, exc: SchemaError) -> Exception:
            where = "".join(f"/{p}" for p in exc.absolute_path)
            return InvalidToolSchemaError(
                str(names[index]), where, f"sanitised parameters are not a valid JSON Schema: {exc.message}"
            )

        # verbatim, each schema is the declared parameters, whose key is at hand
        at_hand: Sequence[bytes | None] = keys if verbatim and keys is not None else [None] * len(schemas)
        CHECKED_SCHEMAS.check_many(schemas, at_hand, refused)
        return PreparedTools(digest, tools, sanitized, dict(zip(names, schemas)), self._param_types)


class BoundedMemo(Generic[K, V]):
    """A bounded, thread-safe memo for a request builder: values already made, by a hashable key.

    Reads take no lock (a dict lookup is atomic, and a build's hot path is one lookup); writes
    take it, and the oldest entry goes first once ``size`` are held. A key that cannot be hashed
    (a hand-made request holding a list) is never remembered: ``get`` answers None and ``put``
    keeps nothing, so the caller simply makes the value again.
    """

    def __init__(self, size: int = 64) -> None:
        self._size = size
        self._entries: dict[K, V] = {}
        self._lock = threading.Lock()
        #: the reference mode: nothing is kept, every value is made again
        self._keeps = not reference_mode()

    def get(self, key: K) -> V | None:
        """The value remembered for ``key``, or None."""
        try:
            return self._entries.get(key)
        except TypeError:  # unhashable
            return None

    def put(self, key: K, value: V) -> None:
        """Remember ``value`` for ``key`` (nothing when the key cannot be hashed)."""
        if not self._keeps:
            return
        entries = self._entries
        with self._lock:
            try:
                if key not in entries and len(entries) >= self._size:
                    del entries[next(iter(entries))]  # dicts keep insertion order
                entries[key] = value
            except TypeError:
                pass


class PerToolObjects(BoundedMemo[tuple[tuple[int, ...], Hashable], tuple[tuple[object, ...], V]]):
    """A bounded memo of what is made from one request's tool objects and a hashable tag.

    Validated ``ToolSpec`` objects are immutable by contract and a trial hands the same ones to
    every turn, so they are recognised by identity: the key is the tuple of their ids (with the
    tag, e.g. the system prompt), and each entry holds the objects themselves so that no id is
    reused by another object while the entry lives.
    """

    def get_made(self, tools: Sequence[object], tag: Hashable) -> V | None:
        """What was made from exactly these objects (in this order) and ``tag``, or None."""
        hit = self._entries.get((tuple(map(id, tools)), tag))
        return None if hit is None else hit[1]

    def put_made(self, tools: Sequence[object], tag: Hashable, value: V) -> None:
        """Remember ``value`` for these objects and ``tag``."""
        held = tuple(tools)
        self.put((tuple(map(id, held)), tag), (held, value))
