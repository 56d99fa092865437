"""The OpenAI chat-completions emulator: one class for every route that speaks the protocol.

It serves ``POST .../chat/completions`` under any prefix (capplan's direct transport posts to
``{api_base}/chat/completions``) and takes the model from the body. The route it stands for
(openai, azure_ai, xai, nova, openrouter, deepseek, moonshot, vllm, llama.cpp) decides which
corpus rules it holds a request to and how it answers on success:

* deepseek, moonshot, vllm, llama.cpp return the model's thinking as ``message.reasoning_content``;
* openrouter returns ``message.reasoning`` plus ``message.reasoning_details`` shaped by the
  upstream family the model id names: Claude's ``reasoning.text`` entries carry a signature,
  Gemini's tool-call turns carry a ``reasoning.encrypted`` entry whose ``id`` is the tool call's,
  OpenAI's and xAI's reasoning arrives as ``reasoning.summary`` plus an encrypted entry, and every
  other family's as unsigned ``reasoning.text``;
* openai, azure_ai, xai and nova return no reasoning text on this protocol.

Every opaque carrier (a signature, encrypted data) is minted by the emulator's
:class:`~capplan.conformance.carriers.CarrierMint`, bound to this route, the model and what it
covers, so an edited, moved or foreign carrier fails verification on replay.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from capplan.conformance.carriers import CarrierMint
from capplan.conformance.corpus import Rule
from capplan.conformance.emulator import Check, Emulator, Reply
from capplan.conformance.emulators.strict_keywords import strict_keyword_not_permitted

#: routes that carry thinking in ``message.reasoning_content``
REASONING_CONTENT_ROUTES = frozenset({"deepseek", "moonshot", "vllm", "llama.cpp"})

#: models that think whatever the request says (globs on the model as sent): Kimi K2-Thinking has
#: no off switch (Moonshot's docs, as anomalyco/models.dev#2294 cites them, 2026-06-13), nor do
#: R1 and deepseek-reasoner; Gemini 3 signs every function call whatever its thinking level
ALWAYS_THINKS: tuple[str, ...] = ("*kimi-k2-thinking*", "*deepseek-reasoner*", "*deepseek-r1*", "*gemini-3*")

#: models that think unless the request turns thinking off: Kimi K2.5/K2.6 (``thinking.type``
#: defaults to ``enabled``), Gemini 2.5 Pro, and DeepSeek V4, held to its thinking-mode contract
#: by default (the stricter reading)
THINKS_BY_DEFAULT: tuple[str, ...] = ("*kimi-k2.5*", "*kimi-k2.6*", "*deepseek-v4*", "*gemini-2.5-pro*")

#: the ``format`` OpenRouter names each upstream family's reasoning_details entries with
_OPENROUTER_FORMATS: tuple[tuple[str, str], ...] = (
    ("anthropic/", "anthropic-claude-v1"),
    ("google/", "google-gemini-v1"),
    ("openai/", "openai-responses-v1"),
    ("x-ai/", "xai-responses-v1"),
)

#: a fixed creation time: answers are deterministic, so two runs record the same bytes
CREATED = 1_700_000_000


# --- reading a request ----------------------------------------------------------------------------

def _messages(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    raw = body.get("messages")
    if not isinstance(raw, list):
        return []
    return [m for m in raw if isinstance(m, Mapping)]


def _tool_calls(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    calls = message.get("tool_calls")
    if message.get("role") != "assistant" or not isinstance(calls, list):
        return []
    return [call for call in calls if isinstance(call, Mapping)]


def _function(call: Mapping[str, Any]) -> Mapping[str, Any]:
    fn = call.get("function")
    return fn if isinstance(fn, Mapping) else {}


def _details(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    raw = message.get("reasoning_details")
    return [entry for entry in raw if isinstance(entry, Mapping)] if isinstance(raw, list) else []


def thinking_switch(body: Mapping[str, Any]) -> bool | None:
    """Whether the request turns thinking on (True), off (False), or leaves the default (None).

    Read from every switch an OpenAI-compatible route documents: top-level ``reasoning_effort``,
    OpenRouter's ``reasoning`` object, Moonshot's/DeepSeek's ``thinking`` object, and the
    ``chat_template_kwargs`` vLLM and llama.cpp pass to the template.
    """
    effort = body.get("reasoning_effort")
    reasoning = body.get("reasoning")
    thinking = body.get("thinking")
    kwargs = body.get("chat_template_kwargs")
    if effort == "none":
        return False
    if isinstance(reasoning, Mapping):
        # ``exclude`` hides the reasoning from the answer; the model still thinks
        if reasoning.get("enabled") is False or reasoning.get("effort") == "none":
            return False
    if isinstance(thinking, Mapping) and thinking.get("type") == "disabled":
        return False
    if isinstance(kwargs, Mapping) and (kwargs.get("enable_thinking") is False or kwargs.get("thinking") is False):
        return False
    if isinstance(effort, str) and effort:
        return True
    if isinstance(reasoning, Mapping) and (reasoning.get("enabled") is True or reasoning.get("effort")
                                           or reasoning.get("max_tokens")):
        return True
    if isinstance(thinking, Mapping) and thinking.get("type") in ("enabled", "adaptive"):
        return True
    if isinstance(kwargs, Mapping) and (kwargs.get("enable_thinking") is True or kwargs.get("thinking") is True):
        return True
    return None


def thinks(model: str, body: Mapping[str, Any]) -> bool:
    """Whether ``model`` thinks on this request (always, its switch, else the model's default)."""
    if any(fnmatch.fnmatchcase(model, glob) for glob in ALWAYS_THINKS):
        return True
    switch = thinking_switch(body)
    if switch is not None:
        return switch
    return any(fnmatch.fnmatchcase(model, glob) for glob in THINKS_BY_DEFAULT)


def _excluded(body: Mapping[str, Any]) -> bool:
    """OpenRouter's ``reasoning.exclude``: the model thinks, the answer does not show it."""
    reasoning = body.get("reasoning")
    return isinstance(reasoning, Mapping) and reasoning.get("exclude") is True


def native_position(messages: Sequence[Mapping[str, Any]], index: int) -> int:
    """Where OpenAI message ``index`` lands in a native history (Anthropic ``messages``, Gemini
    ``contents``) after a gateway's translation: system messages leave the list and consecutive
    tool results (and a user turn right after them) merge into one user turn."""
    position = -1
    previous: str | None = None
    for i, message in enumerate(messages):
        role = message.get("role")
        if role in ("system", "developer"):
            continue
        side = "assistant" if role == "assistant" else "user"
        if side != previous:
            position += 1
            previous = side
        if i == index:
            return position
    return position


# --- the checks the corpus names ------------------------------------------------------------------

def _carries(message: Mapping[str, Any], carriers: Sequence[str]) -> bool:
    for carrier in carriers:
        if carrier in ("reasoning_content", "reasoning"):
            value = message.get(carrier)
            if isinstance(value, str) and value.strip():
                return True
        elif carrier == "reasoning_details":
            if any(entry.get("type") == "reasoning.text" and isinstance(entry.get("text"), str) and entry["text"].strip()
                   for entry in _details(message)):
                return True
    return False


def tool_call_reasoning_missing(emulator: Emulator, body: Mapping[str, Any],
                                params: Mapping[str, Any]) -> dict[str, Any] | None:
    """An assistant tool-call message of the history carries none of ``params.carriers``, while
    the model thinks. Fields: ``index`` (the message's index in ``messages``)."""
    model = str(body.get("model"))
    if not thinks(model, body):
        return None
    carriers = tuple(params.get("carriers", ("reasoning_content",)))
    for index, message in enumerate(_messages(body)):
        if _tool_calls(message) and not _carries(message, carriers):
            return {"index": index}
    return None


def gemini_reasoning_details_missing(emulator: Emulator, body: Mapping[str, Any],
                                     params: Mapping[str, Any]) -> dict[str, Any] | None:
    """An assistant tool-call message of the current turn lacks the ``reasoning.encrypted`` entry
    that names its first tool call (Gemini signs the first function call of each step, and checks
    the signatures of the current turn only: since the last user message). Fields: ``name`` (the
    function), ``position`` (its content's index in the upstream Gemini request)."""
    messages = _messages(body)
    for index, message in enumerate(messages):
        if index < _current_turn_start(messages):
            continue
        calls = _tool_calls(message)
        if not calls:
            continue
        first = calls[0]
        named = [entry for entry in _details(message)
                 if entry.get("type") == "reasoning.encrypted" and entry.get("id") == first.get("id")
                 and isinstance(entry.get("data"), str) and entry["data"]]
        if not named:
            return {"name": _function(first).get("name", ""), "position": native_position(messages, index)}
    return None


def gemini_signature_invalid(emulator: Emulator, body: Mapping[str, Any],
                             params: Mapping[str, Any]) -> dict[str, Any] | None:
    """An assistant tool-call message's ``reasoning.encrypted`` entry names its first tool call but
    its data is not the signature this route minted for this model over that call (edited, or
    made by another model or route), in the current turn (see ``gemini_reasoning_details_missing``). No fields."""
    model = str(body.get("model"))
    messages = _messages(body)
    for message in messages[_current_turn_start(messages):]:
        calls = _tool_calls(message)
        if not calls:
            continue
        first = calls[0]
        for entry in _details(message):
            if entry.get("type") == "reasoning.encrypted" and entry.get("id") == first.get("id") \
                    and not emulator.mint.verify(entry.get("data"), model, gemini_signed(first)):
                return {}
    return None


def anthropic_signature_invalid(emulator: Emulator, body: Mapping[str, Any],
                                params: Mapping[str, Any]) -> dict[str, Any] | None:
    """A replayed signed ``reasoning.text`` entry whose signature this route did not mint for this
    model over this text (edited, another model's, another route's). Fields: ``index`` (the
    message's position in the upstream Anthropic request), ``block`` (the entry's index)."""
    model = str(body.get("model"))
    messages = _messages(body)
    for index, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        for block, entry in enumerate(_details(message)):
            if entry.get("type") != "reasoning.text" or "signature" not in entry:
                continue
            if not emulator.mint.verify(entry.get("signature"), model, str(entry.get("text") or "")):
                return {"index": native_position(messages, index), "block": block}
    return None


def anthropic_thinking_block_missing(emulator: Emulator, body: Mapping[str, Any],
                                     params: Mapping[str, Any]) -> dict[str, Any] | None:
    """Thinking is on and the request continues a tool loop (its last assistant message made tool
    calls and only their results follow) whose assistant message carries no thinking block:
    no signed ``reasoning.text`` and no ``reasoning.encrypted`` entry. Fields: ``index`` (its
    position upstream), ``found`` (the block Claude sees first: ``text`` or ``tool_use``)."""
    model = str(body.get("model"))
    if not thinks(model, body):
        return None
    messages = _messages(body)
    last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=None)
    if last is None or not _tool_calls(messages[last]):
        return None
    if any(m.get("role") not in ("tool",) for m in messages[last + 1:]):
        return None
    signed = [entry for entry in _details(messages[last])
              if (entry.get("type") == "reasoning.text" and entry.get("signature"))
              or (entry.get("type") == "reasoning.encrypted" and entry.get("data"))]
    if signed:
        return None
    content = messages[last].get("content")
    found = "text" if isinstance(content, str) and content.strip() else "tool_use"
    return {"index": native_position(messages, last), "found": found}


def _object_levels(schema: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Mapping[str, Any]]]:
    """Every object schema inside ``schema`` with its path (properties, items, anyOf, $defs ...)."""
    found: list[tuple[tuple[str, ...], Mapping[str, Any]]] = []
    if isinstance(schema, Mapping):
        kind = schema.get("type")
        if kind == "object" or (isinstance(kind, list) and "object" in kind) or "properties" in schema:
            found.append((path, schema))
        for key, value in schema.items():
            if key in ("properties", "$defs", "definitions", "patternProperties") and isinstance(value, Mapping):
                for name, sub in value.items():
                    found += _object_levels(sub, (*path, key, str(name)))
            elif key in ("items", "additionalProperties", "not") and isinstance(value, Mapping):
                found += _object_levels(value, (*path, key))
            elif key in ("anyOf", "oneOf", "allOf", "prefixItems") and isinstance(value, list):
                for i, sub in enumerate(value):
                    found += _object_levels(sub, (*path, key, str(i)))
    return found


def _context(path: tuple[str, ...]) -> str:
    # OpenAI names the offending level as a Python tuple of the keys leading to it: () is the root
    return "(" + ", ".join(repr(key) for key in path) + ("," if len(path) == 1 else "") + ")"


def strict_schema_violation(emulator: Emulator, body: Mapping[str, Any],
                            params: Mapping[str, Any]) -> dict[str, Any] | None:
    """A ``strict: true`` tool whose schema breaks strict mode at some object level:
    ``params.require`` is ``additionalProperties`` (it must be present and false) or ``required``
    (it must list every property). Fields: ``name``, ``tool`` (index), ``context``, ``missing``."""
    require = params.get("require")
    tools = body.get("tools")
    if not isinstance(tools, list):
        return None
    for tool_index, tool in enumerate(tools):
        fn = tool.get("function") if isinstance(tool, Mapping) else None
        if not isinstance(fn, Mapping) or fn.get("strict") is not True:
            continue
        for path, level in _object_levels(fn.get("parameters") or {}):
            fields = {"name": fn.get("name", ""), "tool": tool_index, "context": _context(path)}
            if require == "additionalProperties" and level.get("additionalProperties") is not False:
                return {**fields, "missing": "additionalProperties"}
            if require == "required":
                props = level.get("properties")
                listed = level.get("required")
                names = list(props) if isinstance(props, Mapping) else []
                listed_names = listed if isinstance(listed, list) else []
                absent = [name for name in names if name not in listed_names]
                if absent:
                    return {**fields, "missing": absent[0]}
    return None


def _render(value: Any, quote: bool) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f"'{value}'" if quote else value
    return str(value)


def value_refused(emulator: Emulator, body: Mapping[str, Any],
                  params: Mapping[str, Any]) -> dict[str, Any] | None:
    """Top-level ``params.param`` is present with a value outside ``params.allowed`` (or inside
    ``params.refused``). Fields: ``value`` as the provider prints it (strings quoted when
    ``params.quote``)."""
    name = str(params.get("param"))
    if name not in body:
        return None
    value = body[name]
    if "allowed" in params and value in params["allowed"]:
        return None
    if "refused" in params and value not in params["refused"]:
        return None
    return {"value": _render(value, bool(params.get("quote")))}


def parameter_unsupported(emulator: Emulator, body: Mapping[str, Any],
                          params: Mapping[str, Any]) -> dict[str, Any] | None:
    """Top-level ``params.param`` is present at all. Fields: ``param``."""
    name = str(params.get("param"))
    return {"param": name} if name in body else None


def argument_unrecognized(emulator: Emulator, body: Mapping[str, Any],
                          params: Mapping[str, Any]) -> dict[str, Any] | None:
    """A top-level key outside ``params.allowed`` (or one of ``params.names``). Fields: ``name``."""
    allowed = params.get("allowed")
    names = params.get("names")
    for key in body:
        if isinstance(names, list) and key in names:
            return {"name": key}
        if isinstance(allowed, list) and key not in allowed:
            return {"name": key}
    return None


# --- the emulator -------------------------------------------------------------------------------

#: routes whose usage block carries ``prompt_tokens_details`` (OpenAI's own, and Azure's OpenAI surface)
OPENAI_USAGE_ROUTES = frozenset({"openai", "azure_ai"})


class OpenAIChatEmulator(Emulator):
    """A strict ``/chat/completions`` server for one route (see the module's docstring)."""

    protocol: ClassVar[str] = "openai-chat"
    checks: ClassVar[Mapping[str, Check]] = {
        "tool_call_reasoning_missing": tool_call_reasoning_missing,
        "gemini_reasoning_details_missing": gemini_reasoning_details_missing,
        "gemini_signature_invalid": gemini_signature_invalid,
        "anthropic_signature_invalid": anthropic_signature_invalid,
        "anthropic_thinking_block_missing": anthropic_thinking_block_missing,
        "strict_schema_violation": strict_schema_violation,
        "strict_keyword_not_permitted": strict_keyword_not_permitted,
        "value_refused": value_refused,
        "parameter_unsupported": parameter_unsupported,
        "argument_unrecognized": argument_unrecognized,
    }

    def __init__(self, rules: Sequence[Rule], *, route: str, script: Sequence[Reply] = (),
                 mint: CarrierMint | None = None) -> None:
        super().__init__(rules, route=route, script=script, mint=mint)
        #: tool calls minted so far: ids are ``call_<n>``, unique for the emulator's life, as a
        #: provider's are within a conversation
        self._calls_made = 0

    def answer(self, path: str, raw: bytes) -> tuple[int, Any]:
        """Only ``.../chat/completions`` exists (under any prefix); another path is a 404, recorded."""
        if not path.split("?", 1)[0].rstrip("/").endswith("/chat/completions"):
            return self._record(path, None, None, 404, {"error": {
                "message": f"Invalid URL (POST {path})", "type": "invalid_request_error", "param": None, "code": None}},
                (), ())
        return super().answer(path, raw)

    def model_of(self, path: str, body: Mapping[str, Any]) -> str | None:
        """The body's ``model`` (OpenRouter's is ``<upstream>/<model>``)."""
        model = body.get("model")
        return model if isinstance(model, str) and model else None

    def success(self, path: str, body: Mapping[str, Any], model: str, reply: Reply) -> tuple[int, Any]:
        """A chat.completion with the reply's text or tool calls and the route's reasoning carrier."""
        with self._lock:
            serial = len(self.exchanges) + 1
            first = self._calls_made + 1
            self._calls_made += len(reply.tool_calls)
        calls = [
            {"id": f"call_{first + i}", "type": "function",
             "function": {"name": name, "arguments": json.dumps(arguments, sort_keys=True)}}
            for i, (name, arguments) in enumerate(reply.tool_calls)
        ]
        message: dict[str, Any] = {"role": "assistant", "content": None if calls else reply.text}
        if calls:
            message["tool_calls"] = calls
        thought = reply.reasoning if thinks(model, body) and not _excluded(body) else None
        if thought:
            message.update(self._reasoning(model, thought, calls))
        finish = "tool_calls" if calls else "stop"
        prompt = max(1, len(json.dumps(body, sort_keys=True).encode()) // 4)
        shown = (thought or "") + (reply.text if not calls else json.dumps(calls, sort_keys=True))
        reasoning_tokens = len((thought or "").encode()) // 4
        completion = max(1, len(shown.encode()) // 4)
        choice: dict[str, Any] = {"index": 0, "finish_reason": finish, "message": message, "logprobs": None}
        if self.route == "openrouter":
            choice["native_finish_reason"] = finish
        answer: dict[str, Any] = {
            "id": f"chatcmpl-emu-{serial}", "object": "chat.completion", "created": CREATED, "model": model,
            "choices": [choice],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
                      "completion_tokens_details": {"reasoning_tokens": reasoning_tokens}},
        }
        if self.route in OPENAI_USAGE_ROUTES:
            # OpenAI's chat usage names its cached-input count even when it is 0 (its API reference)
            answer["usage"]["prompt_tokens_details"] = {"cached_tokens": 0, "audio_tokens": 0}
        return 200, answer

    def _reasoning(self, model: str, thought: str, calls: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """The route's reasoning fields for ``thought`` (and, for Gemini, the first tool call)."""
        if self.route in REASONING_CONTENT_ROUTES:
            return {"reasoning_content": thought}
        if self.route != "openrouter":
            return {}
        fmt = next((name for prefix, name in _OPENROUTER_FORMATS if model.startswith(prefix)), "unknown")
        if fmt == "anthropic-claude-v1":
            details: list[dict[str, Any]] = [{"type": "reasoning.text", "text": thought,
                                              "signature": self.mint.mint(model, thought), "format": fmt, "index": 0}]
        elif fmt == "google-gemini-v1":
            details = [{"type": "reasoning.text", "text": thought, "format": fmt, "index": 0}]
            if calls:
                first = calls[0]
                details.append({"type": "reasoning.encrypted", "id": first["id"], "format": fmt, "index": 1,
                                "data": self.mint.mint(model, gemini_signed(first))})
        elif fmt in ("openai-responses-v1", "xai-responses-v1"):
            details = [{"type": "reasoning.summary", "summary": thought, "format": fmt, "index": 0},
                       {"type": "reasoning.encrypted", "data": self.mint.mint(model, thought), "format": fmt, "index": 1}]
        else:
            details = [{"type": "reasoning.text", "text": thought, "format": fmt, "index": 0}]
        return {"reasoning": thought, "reasoning_details": details}


def _current_turn_start(messages: Sequence[Mapping[str, Any]]) -> int:
    """The index after the last user message: where the turn Gemini validates signatures in starts."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "user":
            return index + 1
    return 0


def gemini_signed(call: Mapping[str, Any]) -> str:
    """What a Gemini thought signature covers here: the tool call's id and function name."""
    return f"{call.get('id')}\0{_function(call).get('name')}"


EMULATOR = OpenAIChatEmulator
