"""The ``mock`` provider: deterministic responses offline, with no network and no litellm.

The reply is a function of the request alone (a digest of the kwargs, credentials excluded),
so the same request always yields the same result. A model named for a scripted behaviour
(``mock/careful-1``, ``mock/sloppy-1``, ``mock/user-1``: :mod:`capplan.executor.mock_agents`)
plays its script. Any other mock model echoes: when tools are offered and the conversation
does not end on a tool result, it calls the first tool with arguments built from its
sanitised schema; after a tool result it answers in text, so a trial loop on the mock ends.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from capplan.executor import mock_agents
from capplan.executor.transport import redact


class MockObject(dict[str, Any]):
    """A dict that also answers attribute access, as litellm's response objects do."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def model_dump(self, **_: Any) -> dict[str, Any]:
        """A plain JSON-safe copy (litellm objects offer the same)."""
        result: dict[str, Any] = json.loads(json.dumps(self))
        return result


def is_mock(provider: str) -> bool:
    """Whether a plan's provider is the offline mock (the binding lookup key is its first segment)."""
    return provider.split("/")[0].lower() == "mock"


def complete(kwargs: dict[str, Any]) -> MockObject:
    """A chat-completion-shaped response for ``kwargs``."""
    body = json.dumps(redact(kwargs), sort_keys=True, ensure_ascii=False, default=str)
    digest = hashlib.sha256(body.encode("utf-8")).hexdigest()
    messages = kwargs.get("messages", [])
    tools = kwargs.get("tools") or []
    ends_on_tool_result = bool(messages) and messages[-1].get("role") == "tool"
    scripted = mock_agents.play(str(kwargs.get("model", "")), messages, tools)
    call: tuple[str, str] | None = None
    if scripted is not None:
        if scripted.call is not None:
            call = scripted.call, mock_agents.arguments_json(scripted)
    elif tools and not ends_on_tool_result:
        function = tools[0]["function"]
        call = function["name"], json.dumps(example_arguments(function.get("parameters") or {}), sort_keys=True)
    if call is not None:
        name, arguments = call
        message = MockObject(
            role="assistant",
            content="",
            tool_calls=[
                MockObject(
                    id=f"call_mock_{digest[:12]}",
                    type="function",
                    function=MockObject(name=name, arguments=arguments),
                )
            ],
        )
        produced, finish = arguments, "tool_calls"
    else:
        text = scripted.say if scripted is not None and scripted.say is not None else f"mock reply {digest[:16]}"
        message = MockObject(role="assistant", content=text, tool_calls=None)
        produced, finish = text, "stop"
    prompt = _tokens(json.dumps(messages)) + _tokens(json.dumps(tools))
    completion = _tokens(produced)
    return MockObject(
        id=f"mock-{digest[:24]}",
        object="chat.completion",
        model=kwargs.get("model", "mock"),
        choices=[MockObject(index=0, message=message, finish_reason=finish)],
        usage=MockObject(prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion),
    )


def _tokens(text: str) -> int:
    # about four characters per token, the usual rule of thumb for English and JSON
    return max(1, math.ceil(len(text) / 4))


def example_arguments(schema: dict[str, Any]) -> Any:
    """A small value that satisfies ``schema``'s types and required keys (refs resolved locally)."""
    return _example(schema, schema, depth=0)


def _example(schema: Any, root: dict[str, Any], depth: int) -> Any:
    if not isinstance(schema, dict) or depth > 12:
        return None
    if "$ref" in schema:
        return _example(_resolve(schema["$ref"], root), root, depth + 1)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            branches = [b for b in schema[key] if not (isinstance(b, dict) and b.get("type") == "null")]
            return _example((branches or schema[key])[0], root, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None:
        kind = "object" if "properties" in schema else "string"
    if kind == "object":
        props = schema.get("properties", {})
        return {name: _example(props.get(name, {}), root, depth + 1) for name in schema.get("required", [])}
    if kind == "array":
        return [_example(schema.get("items", {}), root, depth + 1) for _ in range(schema.get("minItems", 0))]
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", -1) + 1)
        return int(low) if kind == "integer" else float(low)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return "m" * max(schema.get("minLength", 4), 1)


def _resolve(ref: str, root: dict[str, Any]) -> Any:
    if not ref.startswith("#/"):
        return {}
    node: Any = root
    for part in ref[2:].split("/"):
        node = node.get(part, {}) if isinstance(node, dict) else {}
    return node
