"""Sanitised tools, memoised on the tool list.

A trial sends the same tool list on every turn, and sanitising it (``$ref`` inlining, dict-map
rewrites, invariant checks) plus compiling its validators costs far more than recognising it. The
memo is keyed twice: first by the identity of the caller's tool objects (a trial hands the same
validated ``ToolSpec`` instances to every turn, so recognising them costs a tuple of ids), then by
a digest of the list's JSON bytes (equal lists made afresh share an entry).

Every build hands out the same sanitised list, to be treated as read-only. Before each reuse it
is compared with a pristine twin that is never handed out (the comparison runs in C), so a caller
who edited one request's tools never corrupts the next request. Whether a sanitised schema is a
valid JSON Schema is checked once per distinct schema in the process, not once per client.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from jsonschema import SchemaError, validators

from executor.policies.schema_sanitizer import ToolSchemaError


class InvalidToolSchemaError(ToolSchemaError):
    """A tool's sanitised parameters are not a valid JSON Schema, so the model would be shown garbage.

    Its base is the sanitiser slot's error, so callers handle one type for every schema refusal.
    """


def tools_json(tools: list[dict[str, Any]]) -> bytes:
    """Compact JSON of a tool list given as dicts (``ChatRequest.tools_json`` is the fast path)."""
    return json.dumps(tools, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


class PreparedTools:
    """One tool list after sanitisation, with what response parsing needs from it.

    The sanitised list is built once and shared by every request built with these tools
    (read-only by contract). Validators and parameter types serve response parsing only, so
    they are made on first use rather than on the first build.
    """

    def __init__(
        self,
        digest: str,
        declared_json: bytes,
        declared: list[dict[str, Any]],
        sanitized: list[dict[str, Any]],
        schemas: Mapping[str, dict[str, Any]],
        param_types: Callable[[list[dict[str, Any]]], Mapping[str, Mapping[str, str]]],
    ) -> None:
        self.digest = digest
        self.declared_json = declared_json
        self.schemas = schemas
        self._declared = declared
        self._sanitized = sanitized
        self._param_types_of = param_types
        self._lock = threading.Lock()
        self._validators: Mapping[str, Any] | None = None
        self._param_types: Mapping[str, Mapping[str, str]] | None = None

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
                    name: validators.validator_for(schema, default=validators.Draft202012Validator)(schema)
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


class _CheckedSchemas:
    """Schemas already shown to be valid JSON Schema, by their canonical JSON; bounded, thread-safe."""

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def check(self, schema: dict[str, Any], cls: Any) -> None:
        """Raise ``SchemaError`` unless ``schema`` is valid for ``cls`` (its metaschema is checked once)."""
        # key order is kept, not sorted: equal schemas from one source serialise alike, and a
        # differently ordered twin is merely checked once more
        key = f"{cls.__name__}:{json.dumps(schema, ensure_ascii=False)}"
        with self._lock:
            if key in self._seen:
                self._seen.move_to_end(key)
                return
        cls.check_schema(schema)
        with self._lock:
            self._seen[key] = None
            while len(self._seen) > self._size:
                self._seen.popitem(last=False)


CHECKED_SCHEMAS = _CheckedSchemas()


class ToolMemo:
    """A bounded, thread-safe LRU of prepared tool lists, keyed by digest and by caller object identity."""

    def __init__(
        self,
        sanitize: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
        param_types: Callable[[list[dict[str, Any]]], Mapping[str, Mapping[str, str]]],
        *,
        size: int = 64,
    ) -> None:
        self._sanitize = sanitize
        self._param_types = param_types
        self._size = size
        self._entries: OrderedDict[str, PreparedTools] = OrderedDict()
        # id-tuple -> (the objects themselves, which keeps their ids from being reused; the entry)
        self._by_identity: OrderedDict[tuple[int, ...], tuple[tuple[object, ...], PreparedTools]] = OrderedDict()
        self._lock = threading.Lock()

    def prepare_objects(self, tools: Sequence[object], declared_json: Callable[[], bytes]) -> PreparedTools:
        """The prepared form of ``tools`` (immutable objects, e.g. ``ToolSpec``), whose JSON ``declared_json`` gives.

        The same objects in the same order are recognised without serialising them; anything else
        goes through ``prepare`` on their JSON bytes.
        """
        key = tuple(map(id, tools))
        with self._lock:
            hit = self._by_identity.get(key)
            if hit is not None:
                self._by_identity.move_to_end(key)
                return hit[1]
        prepared = self.prepare(declared_json())
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
        with self._lock:
            hit = self._entries.get(digest)
            if hit is not None:
                self._entries.move_to_end(digest)
                return hit
        prepared = self._build(digest, declared_json)
        with self._lock:
            self._entries[digest] = prepared
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)
        return prepared

    def _build(self, digest: str, declared_json: bytes) -> PreparedTools:
        tools = json.loads(declared_json)
        # the sanitiser gets its own copy: the caller's tool dicts stay as the caller made them
        # the slot's contract: sanitize never mutates its input, and raises ToolSchemaError
        # (SchemaInvariantError and kin) rather than return a schema it cannot vouch for
        sanitized = self._sanitize(tools)
        schemas: dict[str, dict[str, Any]] = {}
        for tool in sanitized:
            function = tool.get("function", {})
            name = function.get("name")
            schema = function.get("parameters", {"type": "object", "properties": {}})
            cls = validators.validator_for(schema, default=validators.Draft202012Validator)
            try:
                CHECKED_SCHEMAS.check(schema, cls)
            except SchemaError as exc:
                where = "".join(f"/{p}" for p in exc.absolute_path)
                raise InvalidToolSchemaError(
                    str(name), where, f"sanitised parameters are not a valid JSON Schema: {exc.message}"
                ) from None
            schemas[name] = schema
        return PreparedTools(digest, declared_json, tools, sanitized, schemas, self._param_types)
