"""Gemini ``generateContent`` (Google AI Studio, route ``gemini``), held to the corpus's rules.

The emulator serves ``POST …/models/{model}:generateContent`` (the model is named by the path,
as litellm's Gemini route addresses it: ``{api_base}/models/{model}:generateContent``) and
answers like the Gemini API:

* a ``thought: true`` text part when the request asked for thought summaries
  (``generationConfig.thinkingConfig.includeThoughts``);
* one ``functionCall`` part per scripted call; the first call of a step carries a
  ``thoughtSignature`` minted over (route, model, the call's name and arguments), as Gemini 3
  signs the first call of a parallel step;
* otherwise a text part; on Gemini 3 (and whenever thinking was asked for) the last part carries
  a signature minted over its text, where Gemini 3 puts a response's signature;
* ``finishReason``, and a deterministic ``usageMetadata``.

The checks read the wire the way Google documents it. A *turn* starts at the last ``user`` content
that carries text (a ``functionResponse`` content continues the turn); thought signatures are
validated only for the function calls of the current turn
(https://ai.google.dev/gemini-api/docs/thought-signatures). Schema checks walk the legacy
``parameters`` field only: ``parametersJsonSchema`` takes full JSON Schema.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar

from capplan.conformance.emulator import Check, Emulator, Reply, Violation

#: ``/…/models/{model}:{method}`` with an optional query; the model may hold slashes (``tunedModels/x``)
_PATH = re.compile(r"^(?P<prefix>.*?)/models/(?P<model>[^:?]+):(?P<method>[A-Za-z]+)(?:\?.*)?$")
#: the method litellm calls for a non-streamed completion (``streamGenerateContent`` only with stream=True)
METHOD = "generateContent"
#: what a request body's ``functionDeclarations`` key may also be spelled as (proto JSON takes both)
_DECLARATION_KEYS = ("functionDeclarations", "function_declarations")

#: the model of the request this thread is checking: the body does not name it (the path does),
#: and a signature is bound to it; each request is served and checked on its own thread
_checking = threading.local()


def _model_checked() -> str:
    return str(getattr(_checking, "model", ""))


# --- reading the wire ------------------------------------------------------------------------------


def _contents(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    contents = body.get("contents")
    if not isinstance(contents, list):
        return []
    return [c for c in contents if isinstance(c, Mapping)]


def _parts(content: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    parts = content.get("parts")
    if not isinstance(parts, list):
        return []
    return [p for p in parts if isinstance(p, Mapping)]


def _function_call(part: Mapping[str, Any]) -> Mapping[str, Any] | None:
    call = part.get("functionCall", part.get("function_call"))
    return call if isinstance(call, Mapping) else None


def _has_function_response(part: Mapping[str, Any]) -> bool:
    return isinstance(part.get("functionResponse", part.get("function_response")), Mapping)


def _signature(part: Mapping[str, Any]) -> Any:
    return part.get("thoughtSignature", part.get("thought_signature"))


def _is_user(content: Mapping[str, Any]) -> bool:
    # a functionResponse turn is sent with role "user" (litellm) or "function" (older SDKs)
    return content.get("role", "user") in ("user", "function")


def current_turn_start(contents: Sequence[Mapping[str, Any]]) -> int:
    """Index of the content that opens the current turn: the last user content carrying text.

    A user content made only of ``functionResponse`` parts is a step inside the turn, not a new
    turn. With no such content, the whole conversation is the current turn.
    """
    for index in range(len(contents) - 1, -1, -1):
        content = contents[index]
        if _is_user(content) and any("text" in part for part in _parts(content)):
            return index
    return 0


def call_text(name: Any, args: Any) -> str:
    """What a function call's thought signature is minted over: its name and canonical arguments."""
    canonical = json.dumps(args if args is not None else {}, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return f"functionCall\0{name}\0{canonical}"


def part_text(part: Mapping[str, Any]) -> str:
    """What the signature on ``part`` is bound to: the call for a function-call part, else its text."""
    call = _function_call(part)
    if call is not None:
        return call_text(call.get("name"), call.get("args"))
    text = part.get("text")
    return f"text\0{text if isinstance(text, str) else ''}"


def _declarations(body: Mapping[str, Any]) -> Iterator[tuple[int, int, Mapping[str, Any]]]:
    tools = body.get("tools")
    if not isinstance(tools, list):
        return
    for t, tool in enumerate(tools):
        if not isinstance(tool, Mapping):
            continue
        for key in _DECLARATION_KEYS:
            declarations = tool.get(key)
            if isinstance(declarations, list):
                for d, declaration in enumerate(declarations):
                    if isinstance(declaration, Mapping):
                        yield t, d, declaration


def _camel(key: str) -> str:
    # proto JSON accepts a field by its JSON name (camelCase) or its proto name (snake_case)
    head, *rest = key.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def _schema_nodes(schema: Any, location: str) -> Iterator[tuple[Mapping[str, Any], str]]:
    """Every Schema object under ``schema`` with its location as Google's errors spell it.

    ``properties`` is a proto map, so its entries are addressed by position (``properties[2].value``),
    ``anyOf`` as ``any_of[k]``; what is not a Schema field is not descended into.
    """
    if not isinstance(schema, Mapping):
        return
    yield schema, location
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        for index, value in enumerate(properties.values()):
            yield from _schema_nodes(value, f"{location}.properties[{index}].value")
    items = schema.get("items")
    if isinstance(items, Mapping):
        yield from _schema_nodes(items, f"{location}.items")
    any_of = schema.get("anyOf", schema.get("any_of"))
    if isinstance(any_of, list):
        for index, branch in enumerate(any_of):
            yield from _schema_nodes(branch, f"{location}.any_of[{index}]")


def _parameter_nodes(body: Mapping[str, Any]) -> Iterator[tuple[Mapping[str, Any], str]]:
    for t, d, declaration in _declarations(body):
        yield from _schema_nodes(declaration.get("parameters"), f"tools[{t}].function_declarations[{d}].parameters")


# --- the checks ------------------------------------------------------------------------------------


def thought_signature_missing(emulator: Emulator, body: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any] | None:
    """The first function call of a model step in the current turn carries no thoughtSignature.

    Google: in a parallel step only the first call is signed, so only the first is required.
    ``position`` is the content's 1-based index in ``contents`` (a first step after one user
    message is "position 2", as every public report of the error shows).
    """
    contents = _contents(body)
    for index in range(current_turn_start(contents), len(contents)):
        content = contents[index]
        if content.get("role") != "model":
            continue
        for part in _parts(content):
            call = _function_call(part)
            if call is None:
                continue
            if not _signature(part):
                return {"name": call.get("name"), "position": index + 1}
            break
    return None


def is_placeholder(signature: Any, accepted: set[str]) -> bool:
    """Whether ``signature`` is one of Google's documented placeholders, as text or as its base64.

    ``thoughtSignature`` is a bytes field, so on the JSON wire it is base64: the SDKs (and litellm,
    ``get_dummy_thought_signature``) send the placeholder's bytes encoded; some clients send the
    text itself. Both are taken.
    """
    if not isinstance(signature, str):
        return False
    if signature in accepted:
        return True
    padded = signature + "=" * (-len(signature) % 4)
    for decode in (base64.b64decode, base64.urlsafe_b64decode):
        try:
            if decode(padded).decode("utf-8") in accepted:
                return True
        except (binascii.Error, ValueError):
            continue
    return False


def thought_signature_corrupted(emulator: Emulator, body: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any] | None:
    """A model part's thoughtSignature is not one this route minted for this model over that part.

    An edited call or text, a signature from another model or from another route all fail. The
    placeholders Google documents for history it did not sign (``params.accepted``) pass.
    """
    model = _model_checked()
    accepted = {str(value) for value in params.get("accepted") or ()}
    for content in _contents(body):
        if content.get("role") != "model":
            continue
        for part in _parts(content):
            signature = _signature(part)
            if signature is None or is_placeholder(signature, accepted):
                continue
            if not emulator.mint.verify(signature, model, part_text(part)):
                return {}
    return None


def schema_unknown_field(emulator: Emulator, body: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any] | None:
    """A function declaration's ``parameters`` holds a key that is not a field of Gemini's Schema."""
    known = set(params.get("known_fields") or ())
    for node, location in _parameter_nodes(body):
        for key in node:
            if _camel(str(key)) not in known:
                return {"field": key, "location": location}
    return None


def schema_type_list(emulator: Emulator, body: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any] | None:
    """A Schema's ``type`` is a JSON array (``["string", "null"]``); Gemini's ``type`` is one enum value."""
    for node, location in _parameter_nodes(body):
        if isinstance(node.get("type"), list):
            return {"location": location}
    return None


def function_response_count(emulator: Emulator, body: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any] | None:
    """A function-call step is answered by a content with a different number of functionResponse parts."""
    contents = _contents(body)
    for index, content in enumerate(contents[:-1]):
        if content.get("role") != "model":
            continue
        calls = sum(1 for part in _parts(content) if _function_call(part) is not None)
        responses = sum(1 for part in _parts(contents[index + 1]) if _has_function_response(part))
        if calls and responses and calls != responses:
            return {"calls": calls, "responses": responses}
    return None


def function_call_turn_order(emulator: Emulator, body: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any] | None:
    """A model content with a function call does not follow a user turn or a function-response turn."""
    contents = _contents(body)
    for index, content in enumerate(contents):
        if content.get("role") != "model" or not any(_function_call(p) is not None for p in _parts(content)):
            continue
        if index == 0 or not _is_user(contents[index - 1]):
            return {"position": index + 1}
    return None


# --- the emulator ----------------------------------------------------------------------------------


class GeminiEmulator(Emulator):
    """Google AI Studio's ``generateContent``, strict about thought signatures and schemas."""

    protocol: ClassVar[str] = "gemini-generate-content"
    checks: ClassVar[Mapping[str, Check]] = {
        "thought_signature_missing": thought_signature_missing,
        "thought_signature_corrupted": thought_signature_corrupted,
        "schema_unknown_field": schema_unknown_field,
        "schema_type_list": schema_type_list,
        "function_response_count": function_response_count,
        "function_call_turn_order": function_call_turn_order,
    }

    def model_of(self, path: str, body: Mapping[str, Any]) -> str | None:
        match = _PATH.match(path)
        return match.group("model") if match else None

    def answer(self, path: str, raw: bytes) -> tuple[int, Any]:
        """Only ``:generateContent`` is served; any other method is Google's 404, recorded."""
        match = _PATH.match(path)
        if match is not None and match.group("method") != METHOD:
            body: Any
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            error = {"error": {"code": 404, "message": f"Method {match.group('method')} is not served by this emulator.",
                               "status": "NOT_FOUND"}}
            return self._record(path, body, match.group("model"), 404, error, (), ())
        return super().answer(path, raw)

    def violations(self, path: str, body: Mapping[str, Any], model: str) -> tuple[tuple[Violation, ...], tuple[str, ...]]:
        """The base's checks, with ``model`` where the signature checks can read it."""
        _checking.model = model
        try:
            return super().violations(path, body, model)
        finally:
            _checking.model = ""

    def success(self, path: str, body: Mapping[str, Any], model: str, reply: Reply) -> tuple[int, Any]:
        config = body.get("generationConfig")
        thinking = config.get("thinkingConfig") if isinstance(config, Mapping) else None
        # a thinkingBudget of 0 turns thinking off (on the models that allow it)
        thinks = isinstance(thinking, Mapping) and thinking.get("thinkingBudget") != 0
        show_thoughts = thinks and isinstance(thinking, Mapping) and bool(thinking.get("includeThoughts"))
        # Gemini 3 signs every response; earlier thinking models sign when they think
        signs = model.startswith("gemini-3") or thinks
        parts: list[dict[str, Any]] = []
        if show_thoughts:
            parts.append({"text": reply.reasoning, "thought": True})
        for index, (name, args) in enumerate(reply.tool_calls):
            part: dict[str, Any] = {"functionCall": {"name": name, "args": dict(args)}}
            if signs and index == 0:
                part["thoughtSignature"] = self.mint.mint(model, call_text(name, args))
            parts.append(part)
        if not reply.tool_calls:
            text_part: dict[str, Any] = {"text": reply.text}
            if signs:
                text_part["thoughtSignature"] = self.mint.mint(model, part_text(text_part))
            parts.append(text_part)
        prompt_tokens = _token_count(json.dumps(body.get("contents"), sort_keys=True))
        answer_tokens = sum(_token_count(json.dumps(p.get("functionCall") or p.get("text"))) for p in parts
                            if not p.get("thought"))
        thought_tokens = _token_count(reply.reasoning) if thinks else 0
        usage = {"promptTokenCount": prompt_tokens, "candidatesTokenCount": answer_tokens,
                 "totalTokenCount": prompt_tokens + answer_tokens + thought_tokens}
        if thought_tokens:
            usage["thoughtsTokenCount"] = thought_tokens
        with self._lock:
            response_id = f"emu-{len(self.exchanges):06d}"
        return 200, {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": usage,
            "modelVersion": model,
            "responseId": response_id,
        }


def _token_count(text: str) -> int:
    """A deterministic stand-in for a tokenizer: one token per four characters, at least one."""
    return max(1, (len(text) + 3) // 4)


EMULATOR = GeminiEmulator
