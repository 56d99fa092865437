"""Anthropic Messages (``POST /v1/messages``), strict, on loopback.

The emulator reads the request body Anthropic's Messages API reads (``model``, ``system``,
``messages`` with content blocks, ``tools``, ``tool_choice``, ``thinking``, ``max_tokens``,
``temperature``) and holds it to the corpus rules of protocol ``anthropic-messages``. On success
it answers a Messages response: with thinking on (``thinking.type`` ``enabled`` or ``adaptive``)
a ``thinking`` block first, whose ``signature`` the emulator's :class:`CarrierMint` makes over
(route, model, the thinking text as shown), and a ``redacted_thinking`` block when the script
asks for one (its opaque ``data`` minted the same way); then ``text`` or ``tool_use`` blocks
(ids ``toolu_<n>``), ``stop_reason`` and a ``usage`` computed from the body alone.

Replay is verified as Anthropic verifies it: a thinking block whose signature does not verify
for its text and the requested model is refused, and the thinking blocks of the latest assistant
message must be exactly those the emulator returned in that response.

Routes: ``anthropic`` (the Messages API itself). Rules scoped to ``bedrock`` as well are those the
sources show Bedrock answering with the same text; the Bedrock wire (InvokeModel / Converse, SigV4)
is not emulated, so an emulator started with ``route="bedrock"`` serves the Messages body shape
only and stands for the model behind Bedrock, not for Bedrock's own envelope.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from capplan.conformance.emulator import Check, Emulator, Reply

#: the path suffix the Messages API answers on (litellm posts to ``{api_base}/v1/messages``)
MESSAGES_PATH = "/v1/messages"
#: thinking settings under which the model thinks (``disabled`` and absent: it does not)
THINKING_ON = ("enabled", "adaptive")
#: the content block types that carry thinking
THINKING_BLOCKS = ("thinking", "redacted_thinking")
#: the ``tool_choice`` types that force a tool call
FORCED_TOOL_CHOICE = ("any", "tool")
#: rough characters per token, for a usage that is a pure function of the body
CHARS_PER_TOKEN = 4
#: models whose thinking text is omitted unless ``thinking.display`` asks for it: "Starting with
#: Claude Opus 4.7, thinking content is omitted from the response by default" (Anthropic's
#: What's new in Claude Opus 4.7, quoted in anthropics/claude-code#56356, 2026-05-05)
OMITTED_BY_DEFAULT: tuple[str, ...] = ("claude-opus-4-7*", "claude-opus-4.7*", "claude-opus-4-8*", "claude-opus-4.8*")


@dataclass(frozen=True)
class AnthropicReply(Reply):
    """A :class:`Reply` that may also return a ``redacted_thinking`` block after the thinking."""

    redacted: bool = False


class AnthropicMessagesEmulator(Emulator):
    """A strict loopback Anthropic Messages API."""

    protocol: ClassVar[str] = "anthropic-messages"
    checks: ClassVar[Mapping[str, Check]]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._ids_lock = threading.Lock()
        self._next_tool_id = 0
        self._next_message_id = 0
        #: what each response carried as thinking, by its tool_use ids (or its text), so the
        #: latest assistant message of a later request can be compared with what was returned
        self._issued: dict[tuple[str, ...], tuple[dict[str, Any], ...]] = {}

    def __enter__(self) -> AnthropicMessagesEmulator:
        self.start()
        return self

    # --- the protocol -------------------------------------------------------------------------

    def answer(self, path: str, raw: bytes) -> tuple[int, Any]:
        """Anything but ``POST …/v1/messages`` is Anthropic's 404; the rest as the base answers."""
        if not path.split("?", 1)[0].rstrip("/").endswith(MESSAGES_PATH):
            return self._record(path, None, None, 404, _error("not_found_error", "Not Found"), (), ())
        return super().answer(path, raw)

    def model_of(self, path: str, body: Mapping[str, Any]) -> str | None:
        """The body's ``model``."""
        model = body.get("model")
        return model if isinstance(model, str) and model else None

    def success(self, path: str, body: Mapping[str, Any], model: str, reply: Reply) -> tuple[int, Any]:
        """A Messages response: thinking (when on), then text or tool_use blocks, and usage."""
        content: list[dict[str, Any]] = []
        thinking = body.get("thinking")
        if isinstance(thinking, Mapping) and thinking.get("type") in THINKING_ON:
            # display "omitted" shows no text (the signature covers what is shown); it is the
            # default from Claude Opus 4.7 on
            display = thinking.get("display") or ("omitted" if _omits_by_default(model) else "summarized")
            shown = "" if display == "omitted" else reply.reasoning
            content.append({"type": "thinking", "thinking": shown, "signature": self.mint.mint(model, shown)})
            if isinstance(reply, AnthropicReply) and reply.redacted:
                content.append({"type": "redacted_thinking", "data": self.redacted_data(model, shown)})
        if reply.tool_calls:
            ids = self._tool_ids(len(reply.tool_calls))
            content += [{"type": "tool_use", "id": call_id, "name": name, "input": dict(arguments)}
                        for call_id, (name, arguments) in zip(ids, reply.tool_calls)]
            key: tuple[str, ...] = tuple(ids)
        else:
            content.append({"type": "text", "text": reply.text})
            key = _text_key(content)
        with self._ids_lock:
            self._issued[key] = tuple(dict(block) for block in content if block["type"] in THINKING_BLOCKS)
            self._next_message_id += 1
            message_id = f"msg_emu_{self._next_message_id}"
        return 200, {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
            "stop_sequence": None,
            "usage": {**_input_usage(body), "output_tokens": _tokens(content)},
        }

    # --- carriers and the record of what was returned -----------------------------------------

    def redacted_data(self, model: str, seed: str) -> str:
        """An opaque redacted_thinking payload bound to this route and ``model``."""
        nonce = hashlib.sha256(f"{model}\0{seed}".encode()).hexdigest()[:16]
        return f"{nonce}:{self.mint.mint(model, 'redacted_thinking:' + nonce)}"

    def redacted_valid(self, data: object, model: str) -> bool:
        """Whether ``data`` is a redacted payload this route made for ``model``."""
        if not isinstance(data, str) or ":" not in data:
            return False
        nonce, carrier = data.split(":", 1)
        return self.mint.verify(carrier, model, "redacted_thinking:" + nonce)

    def issued_thinking(self, blocks: Sequence[Any]) -> tuple[dict[str, Any], ...] | None:
        """The thinking blocks of the response an assistant message's ``blocks`` came from, if known."""
        key = tuple(str(block.get("id", "")) for block in blocks if isinstance(block, Mapping) and block.get("type") == "tool_use")
        if not key:
            key = _text_key(blocks)
        with self._ids_lock:
            return self._issued.get(key) if key else None

    def _tool_ids(self, count: int) -> list[str]:
        with self._ids_lock:
            first = self._next_tool_id + 1
            self._next_tool_id += count
        return [f"toolu_{n}" for n in range(first, first + count)]


def _omits_by_default(model: str) -> bool:
    return any(fnmatch.fnmatchcase(model, glob) for glob in OMITTED_BY_DEFAULT)


def _text_key(blocks: Sequence[Any]) -> tuple[str, ...]:
    """A text-only response's key: its text and its first signature (a reply text such as
    "done" recurs across conversations; the signature tells their responses apart)."""
    texts = [b.get("text") for b in blocks if isinstance(b, Mapping) and b.get("type") == "text"]
    if len(texts) != 1 or not isinstance(texts[0], str):
        return ()
    signature = next((b.get("signature") for b in blocks if isinstance(b, Mapping) and b.get("type") == "thinking"), None)
    return ("text", texts[0], signature if isinstance(signature, str) else "")


# --- reading a request ------------------------------------------------------------------------


def _messages(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    messages = body.get("messages")
    if not isinstance(messages, list):
        return []
    return [m if isinstance(m, Mapping) else {} for m in messages]


def _blocks(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A message's content as blocks (a string is one text block, as Anthropic reads it)."""
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        return []
    return [b if isinstance(b, Mapping) else {} for b in content]


def _thinking_type(body: Mapping[str, Any]) -> str | None:
    thinking = body.get("thinking")
    if not isinstance(thinking, Mapping):
        return None
    kind = thinking.get("type")
    return kind if isinstance(kind, str) else None


def _last_assistant(messages: Sequence[Mapping[str, Any]]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "assistant":
            return index
    return None


def _continues_tool_loop(messages: Sequence[Mapping[str, Any]], assistant: int) -> bool:
    """Whether the request ends by answering ``assistant``'s tool calls (a tool loop in progress)."""
    tail = messages[assistant + 1:]
    return (len(tail) == 1 and tail[0].get("role") == "user"
            and any(b.get("type") == "tool_result" for b in _blocks(tail[0])))


# --- the checks (one per rule kind; ``None`` keeps the rule, a dict fills the error) ----------


def _emu(emulator: Emulator) -> AnthropicMessagesEmulator:
    if not isinstance(emulator, AnthropicMessagesEmulator):
        raise TypeError(f"an anthropic-messages check needs the Anthropic emulator, got {type(emulator).__name__}")
    return emulator


def signature_invalid(emulator: Emulator, body: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any] | None:
    """A replayed ``thinking`` block whose signature is not this route's for its text and the model asked."""
    emu, model = _emu(emulator), str(body.get("model"))
    for m, message in enumerate(_messages(body)):
        if message.get("role") != "assistant":
            continue
        for b, block in enumerate(_blocks(message)):
            if block.get("type") == "thinking" and not emu.mint.verify(block.get("signature"), model, str(block.get("thinking", ""))):
                return {"message": m, "block": b}
    return None


def latest_thinking_modified(emulator: Emulator, body: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any] | None:
    """The latest assistant message's thinking blocks are not those its response returned.

    A signed block that fails verification is the signature rule's; here: a redacted payload
    that is not this route's, or thinking blocks dropped, added or reordered against the
    response the message came from (when that response was this emulator's).
    """
    emu, model = _emu(emulator), str(body.get("model"))
    messages = _messages(body)
    latest = _last_assistant(messages)
    if latest is None:
        return None
    blocks = _blocks(messages[latest])
    sent = [(b, block) for b, block in enumerate(blocks) if block.get("type") in THINKING_BLOCKS]
    if not sent:
        return None  # leaving thinking out is allowed (the loop-tail rule says when it is required)
    for b, block in sent:
        if block.get("type") == "redacted_thinking" and not emu.redacted_valid(block.get("data"), model):
            return {"message": latest, "block": b}
    issued = emu.issued_thinking(blocks)
    if issued is None:
        return None
    for position, (b, block) in enumerate(sent):
        if position >= len(issued) or dict(block) != dict(issued[position]):
            if block.get("type") == "thinking" and not emu.mint.verify(block.get("signature"), model, str(block.get("thinking", ""))):
                return None  # an edited signed block: the signature rule answers it
            return {"message": latest, "block": b}
    if len(sent) != len(issued):
        return {"message": latest, "block": sent[-1][0]}
    return None


def loop_tail_without_thinking(emulator: Emulator, body: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any] | None:
    """Thinking on, the request continues a tool loop, and its assistant turn does not start with thinking."""
    if _thinking_type(body) not in THINKING_ON:
        return None
    messages = _messages(body)
    latest = _last_assistant(messages)
    if latest is None or not _continues_tool_loop(messages, latest):
        return None
    blocks = _blocks(messages[latest])
    first = str(blocks[0].get("type")) if blocks else "nothing"
    if first in THINKING_BLOCKS:
        return None
    return {"message": latest, "found": first}


def thinking_not_first(emulator: Emulator, body: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any] | None:
    """An assistant message with thinking blocks that does not start with one."""
    for m, message in enumerate(_messages(body)):
        blocks = _blocks(message)
        if (message.get("role") == "assistant" and blocks and blocks[0].get("type") not in THINKING_BLOCKS
                and any(b.get("type") in THINKING_BLOCKS for b in blocks)):
            return {"message": m, "found": str(blocks[0].get("type"))}
    return None


def thinking_last_block(emulator: Emulator, body: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any] | None:
    """An earlier assistant message (not the one the request continues) that ends with a thinking block."""
    messages = _messages(body)
    for m, message in enumerate(messages[:-1]):
        blocks = _blocks(message)
        if message.get("role") == "assistant" and blocks and blocks[-1].get("type") == "thinking":
            return {"message": m}
    return None


def tool_use_unanswered(emulator: Emulator, body: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any] | None:
    """An assistant message's ``tool_use`` ids not all answered by ``tool_result`` blocks in the next message."""
    messages = _messages(body)
    for m, message in enumerate(messages[:-1]):
        if message.get("role") != "assistant":
            continue
        calls = [str(b.get("id")) for b in _blocks(message) if b.get("type") == "tool_use"]
        answered = {str(b.get("tool_use_id")) for b in _blocks(messages[m + 1]) if b.get("type") == "tool_result"}
        missing = [call for call in calls if call not in answered]
        if messages[m + 1].get("role") != "user":
            missing = calls
        if missing:
            return {"message": m, "ids": ", ".join(missing)}
    return None


def cache_breakpoints_over(emulator: Emulator, body: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any] | None:
    """More ``cache_control`` blocks in the whole request (system, tools, messages) than ``params.max``."""
    count = _cache_markers(body)
    return {"count": count} if count > int(params.get("max", 4)) else None


def sampling_with_thinking(emulator: Emulator, body: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any] | None:
    """``params.param`` set to anything but 1 while thinking is one of ``params.thinking``."""
    if _thinking_type(body) not in tuple(params.get("thinking", THINKING_ON)):
        return None
    value = body.get(str(params.get("param", "temperature")))
    return {"value": value} if value is not None and value != 1 else None


def thinking_with_forced_tool(emulator: Emulator, body: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any] | None:
    """Thinking on while ``tool_choice`` forces a tool (``any`` or a named ``tool``)."""
    choice = body.get("tool_choice")
    if _thinking_type(body) in THINKING_ON and isinstance(choice, Mapping) and choice.get("type") in FORCED_TOOL_CHOICE:
        return {"choice": choice.get("type")}
    return None


def max_tokens_not_above_budget(emulator: Emulator, body: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any] | None:
    """``thinking.type: enabled`` with ``max_tokens`` not greater than ``budget_tokens``."""
    budget = _budget(body)
    max_tokens = body.get("max_tokens")
    if budget is None or not isinstance(max_tokens, int) or max_tokens > budget:
        return None
    return {"max_tokens": max_tokens, "budget_tokens": budget}


def budget_below_minimum(emulator: Emulator, body: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any] | None:
    """``thinking.type: enabled`` with ``budget_tokens`` under ``params.min``."""
    budget = _budget(body)
    minimum = int(params.get("min", 1024))
    return {"budget_tokens": budget, "min": minimum} if budget is not None and budget < minimum else None


def thinking_type_refused(emulator: Emulator, body: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any] | None:
    """A ``thinking.type`` among ``params.types`` (a shape the rule's models no longer take)."""
    kind = _thinking_type(body)
    return {"type": kind} if kind is not None and kind in tuple(params.get("types", ())) else None


def param_present(emulator: Emulator, body: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any] | None:
    """``params.param`` sent with a value other than ``params.allowed`` (when given)."""
    value = body.get(str(params.get("param")))
    if value is None or ("allowed" in params and value == params["allowed"]):
        return None
    return {"value": value}


def _budget(body: Mapping[str, Any]) -> int | None:
    thinking = body.get("thinking")
    if not isinstance(thinking, Mapping) or thinking.get("type") != "enabled":
        return None
    budget = thinking.get("budget_tokens")
    return budget if isinstance(budget, int) and not isinstance(budget, bool) else None


def _cache_markers(body: Mapping[str, Any]) -> int:
    """Blocks carrying ``cache_control``: system blocks, tools, and message content blocks
    (a tool_result's own content blocks included). A tool's ``input_schema`` is not looked into:
    a property may well be named ``cache_control``."""
    count = 0
    system = body.get("system")
    if isinstance(system, list):
        count += sum(1 for block in system if isinstance(block, Mapping) and block.get("cache_control") is not None)
    tools = body.get("tools")
    if isinstance(tools, list):
        count += sum(1 for tool in tools if isinstance(tool, Mapping) and tool.get("cache_control") is not None)
    for message in _messages(body):
        for block in _blocks(message):
            count += block.get("cache_control") is not None
            inner = block.get("content") if block.get("type") == "tool_result" else None
            if isinstance(inner, list):
                count += sum(1 for part in inner if isinstance(part, Mapping) and part.get("cache_control") is not None)
    return count


# --- usage: a pure function of the body -------------------------------------------------------


def _tokens(value: Any) -> int:
    return len(json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)) // CHARS_PER_TOKEN + 1


def _input_usage(body: Mapping[str, Any]) -> dict[str, int]:
    """Input tokens split as Anthropic reports them: read from cache, written to cache, the rest.

    The request is read in Anthropic's cache order (tools, system, messages). What precedes the
    next-to-last breakpoint counts as read from cache (an earlier turn wrote it), what lies
    between the last two as written, and what follows the last as plain input.
    """
    parts: list[tuple[Any, bool]] = []
    for tool in body.get("tools") or []:
        parts.append((tool, isinstance(tool, Mapping) and tool.get("cache_control") is not None))
    system = body.get("system")
    if isinstance(system, list):
        parts += [(block, isinstance(block, Mapping) and block.get("cache_control") is not None) for block in system]
    elif system:
        parts.append((system, False))
    for message in _messages(body):
        parts += [(block, block.get("cache_control") is not None) for block in _blocks(message)]
    marks = [i for i, (_, marked) in enumerate(parts) if marked]
    sizes = [_tokens(part) for part, _ in parts]
    last = marks[-1] + 1 if marks else 0
    before = marks[-2] + 1 if len(marks) > 1 else 0
    return {
        "input_tokens": sum(sizes[last:]) or 1,
        "cache_creation_input_tokens": sum(sizes[before:last]),
        "cache_read_input_tokens": sum(sizes[:before]),
    }


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


AnthropicMessagesEmulator.checks = {
    "signature_invalid": signature_invalid,
    "latest_thinking_modified": latest_thinking_modified,
    "loop_tail_without_thinking": loop_tail_without_thinking,
    "thinking_not_first": thinking_not_first,
    "thinking_last_block": thinking_last_block,
    "tool_use_unanswered": tool_use_unanswered,
    "cache_breakpoints_over": cache_breakpoints_over,
    "sampling_with_thinking": sampling_with_thinking,
    "thinking_with_forced_tool": thinking_with_forced_tool,
    "max_tokens_not_above_budget": max_tokens_not_above_budget,
    "budget_below_minimum": budget_below_minimum,
    "thinking_type_refused": thinking_type_refused,
    "param_present": param_present,
}

EMULATOR = AnthropicMessagesEmulator
