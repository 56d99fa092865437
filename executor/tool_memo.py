"""Sanitised tools, memoised on a digest of the tool list.

A trial sends the same tool list on every turn, and sanitising it (``$ref`` inlining, dict-map
rewrites, invariant checks) plus compiling its validators costs far more than hashing it. The
memo keeps the sanitised list as canonical JSON text and hands every caller a fresh copy, so a
policy that edits its input cannot corrupt the next request.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
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


@dataclass(frozen=True)
class PreparedTools:
    """One tool list after sanitisation, with what response parsing needs from it."""

    digest: str
    declared_json: bytes
    sanitized_json: str
    schemas: Mapping[str, dict[str, Any]]
    validators: Mapping[str, Any]
    param_types: Mapping[str, Mapping[str, str]]

    def sanitized(self) -> list[dict[str, Any]]:
        """A fresh copy of the sanitised tool list."""
        result: list[dict[str, Any]] = json.loads(self.sanitized_json)
        return result

    def declared(self) -> list[dict[str, Any]]:
        """A fresh copy of the tool list as the caller declared it."""
        result: list[dict[str, Any]] = json.loads(self.declared_json)
        return result


class ToolMemo:
    """A bounded, thread-safe LRU of prepared tool lists, keyed by digest."""

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
        self._lock = threading.Lock()

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
        compiled: dict[str, Any] = {}
        for tool in sanitized:
            function = tool.get("function", {})
            name = function.get("name")
            schema = function.get("parameters", {"type": "object", "properties": {}})
            cls = validators.validator_for(schema, default=validators.Draft202012Validator)
            try:
                cls.check_schema(schema)
            except SchemaError as exc:
                where = "".join(f"/{p}" for p in exc.absolute_path)
                raise InvalidToolSchemaError(
                    str(name), where, f"sanitised parameters are not a valid JSON Schema: {exc.message}"
                ) from None
            schemas[name] = schema
            compiled[name] = cls(schema)
        return PreparedTools(
            digest=digest,
            declared_json=declared_json,
            sanitized_json=json.dumps(sanitized, ensure_ascii=False),
            schemas=schemas,
            validators=compiled,
            # declared, not sanitised: only the declaration tells a dict-map from a genuine array
            param_types=self._param_types(tools),
        )
