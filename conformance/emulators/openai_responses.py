"""OpenAI's Responses API (``POST /v1/responses``), as OpenAI and xAI serve it.

The emulator answers a real Responses object: with ``reasoning: {effort, summary}`` a
``reasoning`` output item (``rs_…``, its summary, and, when ``include`` asks for
``reasoning.encrypted_content``, an encrypted payload minted by this route's
:class:`~capplan.conformance.carriers.CarrierMint`), then either ``function_call`` items
(``fc_…`` / ``call_…``) or one assistant ``message`` with ``output_text``, and the usage block
OpenAI reports.

How the emulator knows which item a reasoning item must be followed by
-------------------------------------------------------------------------
OpenAI refuses a replayed reasoning item that is not followed by the item it preceded, and a
``function_call`` whose reasoning item was dropped. With ``store: false`` nothing of the
conversation is kept on the provider, so the pairing has to travel with the request:

- ``encrypted_content`` is ``<carrier>.<seal>``. The seal (base64 JSON) names, in the clear, the
  reasoning item's own id and the id of the output item that followed it; the carrier is the
  mint's HMAC over (route, model, those two ids and the summary texts). A seal whose ids or whose
  summary were edited, or that is replayed to another model or another route (whose mint has
  another key), fails verification; a verified seal tells the emulator the required follower.
- The emulator also remembers the ids it minted (each ``fc_…`` and the ``rs_…`` before it, each
  ``rs_…`` and its follower). Item ids are unique to this emulator (a random tag per instance, as
  OpenAI's are unique), so a ``function_call`` replayed with its ``fc_…`` id names its reasoning
  item even when that reasoning item was dropped — which is exactly when the provider objects.
  A ``function_call`` replayed without ``id`` (only ``call_id``) names nothing and is accepted.
- A reasoning item without ``encrypted_content`` under ``store: false`` is refused as OpenAI
  refuses it (the item is not persisted, so its id finds nothing).
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from capplan.conformance.carriers import CarrierMint
from capplan.conformance.corpus import Rule
from capplan.conformance.emulator import Check, Emulator, Reply
from capplan.conformance.emulators.strict_keywords import strict_keyword_not_permitted

#: the ``include`` value that asks for each reasoning item's encrypted payload
ENCRYPTED_INCLUDE = "reasoning.encrypted_content"
#: the path suffix this emulator serves (``/v1/responses`` for OpenAI and xAI)
RESPONSES_PATH = "/responses"
#: item types that are the model's own output (what a reasoning item can precede)
OUTPUT_ITEM_TYPES = frozenset({"function_call", "message", "custom_tool_call", "web_search_call",
                               "file_search_call", "computer_call", "code_interpreter_call",
                               "local_shell_call", "mcp_call", "image_generation_call"})


# --- the input, read as the provider reads it ----------------------------------------------------

def input_items(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The request's ``input`` as a list of item objects (a plain string is one user message)."""
    raw = body.get("input")
    if isinstance(raw, str):
        return [{"type": "message", "role": "user", "content": raw}]
    if not isinstance(raw, list):
        return []
    items: list[dict[str, Any]] = []
    for item in raw:
        if isinstance(item, dict):
            # an "easy input message" ({"role", "content"}) has no type: it is a message
            items.append(item if "type" in item else {"type": "message", **item})
    return items


def item_type(item: Mapping[str, Any]) -> str:
    return str(item.get("type") or "message")


def is_output_item(item: Mapping[str, Any]) -> bool:
    """Whether ``item`` is something the model produced (an assistant message or a call)."""
    kind = item_type(item)
    if kind == "message":
        return item.get("role") == "assistant"
    return kind in OUTPUT_ITEM_TYPES


def summary_texts(item: Mapping[str, Any]) -> list[str]:
    """The texts of a reasoning item's summary parts, in order."""
    parts = item.get("summary")
    if not isinstance(parts, list):
        return []
    return [str(part.get("text", "")) for part in parts if isinstance(part, dict)]


# --- the encrypted payload -----------------------------------------------------------------------

@dataclass(frozen=True)
class Seal:
    """What an emulator-minted ``encrypted_content`` says in the clear, and its carrier."""

    carrier: str
    item_id: str
    follower_id: str


def _bound_text(item_id: str, follower_id: str, summary: Sequence[str]) -> str:
    # canonical JSON: an edit of any id or summary part changes the bytes the carrier covers
    return json.dumps([item_id, follower_id, list(summary)], ensure_ascii=False, separators=(",", ":"))


def seal(mint: CarrierMint, model: str, item_id: str, follower_id: str, summary: Sequence[str]) -> str:
    """The ``encrypted_content`` of reasoning item ``item_id`` followed by ``follower_id``."""
    carrier = mint.mint(model, _bound_text(item_id, follower_id, summary))
    clear = json.dumps({"item": item_id, "follows": follower_id}, separators=(",", ":")).encode()
    return carrier + "." + base64.urlsafe_b64encode(clear).decode("ascii").rstrip("=")


def unseal(value: object) -> Seal | None:
    """The seal inside ``value``, or ``None`` when it is not an emulator-minted payload at all."""
    if not isinstance(value, str) or "." not in value:
        return None
    carrier, _, clear = value.rpartition(".")
    try:
        decoded = json.loads(base64.urlsafe_b64decode(clear + "=" * (-len(clear) % 4)))
    except (ValueError, binascii.Error, RecursionError):  # a hostile payload is just not ours
        return None
    if not isinstance(decoded, dict) or not isinstance(decoded.get("item"), str) or not isinstance(decoded.get("follows"), str):
        return None
    return Seal(carrier, decoded["item"], decoded["follows"])


def verify_reasoning(mint: CarrierMint, model: str, item: Mapping[str, Any]) -> bool:
    """Whether ``item``'s encrypted content was minted by ``mint`` for ``model``, unedited, for this item."""
    found = unseal(item.get("encrypted_content"))
    if found is None:
        return False
    given_id = item.get("id")
    if given_id is not None and given_id != found.item_id:
        return False  # the payload belongs to another item
    return mint.verify(found.carrier, model, _bound_text(found.item_id, found.follower_id, summary_texts(item)))


def reasoning_id(item: Mapping[str, Any]) -> str:
    """A reasoning item's id: its own, or the one its payload names."""
    if isinstance(item.get("id"), str):
        return str(item["id"])
    found = unseal(item.get("encrypted_content"))
    return found.item_id if found is not None else ""


# --- the checks the corpus names -----------------------------------------------------------------

def _model(body: Mapping[str, Any]) -> str:
    return str(body.get("model", ""))


def _reasoning_config(body: Mapping[str, Any]) -> Mapping[str, Any]:
    value = body.get("reasoning")
    return value if isinstance(value, dict) else {}


def check_encrypted_content_requested(emu: Emulator, body: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any] | None:
    """``include`` asks for encrypted reasoning (the rule's model scope says who cannot give it)."""
    include = body.get("include")
    return {} if isinstance(include, list) and ENCRYPTED_INCLUDE in include else None


def check_temperature_not_default(emu: Emulator, body: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any] | None:
    """``temperature`` set to anything but the model's one default."""
    value = body.get("temperature")
    default = params.get("default", 1)
    if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool) and value == default):
        return None
    return {"value": value}


def check_reasoning_effort_present(emu: Emulator, body: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any] | None:
    """``reasoning.effort`` sent at all (to a model that has no such dial)."""
    if _reasoning_config(body).get("effort") is None:
        return None
    return {"model": _model(body)}


def check_reasoning_effort_value(emu: Emulator, body: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any] | None:
    """``reasoning.effort`` outside ``params.supported``."""
    effort = _reasoning_config(body).get("effort")
    supported = params.get("supported", ())
    if effort is None or effort in supported:
        return None
    return {"value": effort, "model": _model(body)}


def check_previous_response_unknown(emu: Emulator, body: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any] | None:
    """``previous_response_id`` names no stored response (one made with ``store: false`` was never kept)."""
    previous = body.get("previous_response_id")
    if previous is None:
        return None
    stored = emu.stored_responses if isinstance(emu, ResponsesEmulator) else frozenset()
    return None if previous in stored else {"response_id": previous}


def check_reasoning_not_persisted(emu: Emulator, body: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any] | None:
    """With ``store: false``, a reasoning item replayed by id without its encrypted content."""
    if body.get("store", True) is not False:
        return None
    for item in input_items(body):
        if item_type(item) == "reasoning" and isinstance(item.get("id"), str) and item.get("encrypted_content") is None:
            return {"item_id": item["id"]}
    return None


def check_encrypted_content_unverified(emu: Emulator, body: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any] | None:
    """A reasoning item whose encrypted content this route did not mint for this model over this item."""
    model = _model(body)
    for item in input_items(body):
        if item_type(item) == "reasoning" and item.get("encrypted_content") is not None:
            if not verify_reasoning(emu.mint, model, item):
                return {"item_id": reasoning_id(item)}
    return None


def check_reasoning_without_follower(emu: Emulator, body: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any] | None:
    """A reasoning item not immediately followed by the output item it preceded."""
    items = input_items(body)
    for index, item in enumerate(items):
        if item_type(item) != "reasoning":
            continue
        own_id = reasoning_id(item)
        found = unseal(item.get("encrypted_content"))
        required = found.follower_id if found is not None else None
        if required is None and isinstance(emu, ResponsesEmulator):
            required = emu.follower_of(own_id)
        following = items[index + 1] if index + 1 < len(items) else None
        if required is not None:
            kept = following is not None and following.get("id") == required
        else:
            # a reasoning item the emulator never minted: it still has to precede some output
            kept = following is not None and is_output_item(following)
        if not kept:
            return {"item_id": own_id}
    return None


def check_call_without_reasoning(emu: Emulator, body: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any] | None:
    """A ``function_call`` replayed by its id whose reasoning item is not before it in the input."""
    if not isinstance(emu, ResponsesEmulator):
        return None
    seen_reasoning: set[str] = set()
    for item in input_items(body):
        kind = item_type(item)
        if kind == "reasoning":
            seen_reasoning.add(reasoning_id(item))
        elif kind == "function_call" and isinstance(item.get("id"), str):
            needed = emu.reasoning_before(item["id"])
            if needed is not None and needed not in seen_reasoning:
                return {"item_id": item["id"], "reasoning_id": needed}
    return None


CHECKS: dict[str, Check] = {
    "encrypted_content_requested": check_encrypted_content_requested,
    "temperature_not_default": check_temperature_not_default,
    "reasoning_effort_present": check_reasoning_effort_present,
    "reasoning_effort_value": check_reasoning_effort_value,
    "previous_response_unknown": check_previous_response_unknown,
    "reasoning_not_persisted": check_reasoning_not_persisted,
    "encrypted_content_unverified": check_encrypted_content_unverified,
    "reasoning_without_follower": check_reasoning_without_follower,
    "call_without_reasoning": check_call_without_reasoning,
    "strict_keyword_not_permitted": strict_keyword_not_permitted,
}


# --- the emulator --------------------------------------------------------------------------------

class ResponsesEmulator(Emulator):
    """A strict loopback Responses API for one route (``openai`` or ``xai``)."""

    protocol: ClassVar[str] = "openai-responses"
    checks: ClassVar[Mapping[str, Check]] = CHECKS

    def __init__(self, rules: Sequence[Rule], *, route: str, script: Sequence[Reply] = (),
                 mint: CarrierMint | None = None) -> None:
        super().__init__(rules, route=route, script=script, mint=mint)
        # ids are unique to this instance, so a second emulator (a route switch) never
        # mistakes another's items for its own
        self._tag = secrets.token_hex(6)
        self._counter = 0
        self._state = threading.Lock()
        self._follower: dict[str, str] = {}   # rs_… -> the item minted right after it
        self._reasoning: dict[str, str] = {}  # fc_… -> the rs_… minted before it
        self._stored: set[str] = set()        # resp_… made with store not false

    # --- what the checks read --------------------------------------------------------------------

    @property
    def stored_responses(self) -> frozenset[str]:
        with self._state:
            return frozenset(self._stored)

    def follower_of(self, reasoning_item: str) -> str | None:
        """The id of the item this emulator minted right after ``reasoning_item``."""
        with self._state:
            return self._follower.get(reasoning_item)

    def reasoning_before(self, call_item: str) -> str | None:
        """The reasoning item this emulator minted before function call ``call_item``."""
        with self._state:
            return self._reasoning.get(call_item)

    # --- the protocol ----------------------------------------------------------------------------

    def answer(self, path: str, raw: bytes) -> tuple[int, Any]:
        route_path = path.split("?", 1)[0].rstrip("/")
        if not route_path.endswith(RESPONSES_PATH):
            # the provider's API has no such endpoint; the request is never held to a rule
            return self._record(path, None, None, 404, _not_found(path), (), ())
        try:
            body = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            body = None
        if isinstance(body, dict) and body.get("stream") is True:
            # the emulator answers whole JSON objects only; saying so beats an event stream a
            # client would misread (plumbing, not a corpus rule)
            return self._record(path, body, self.model_of(path, body), 400, _no_stream(), (), ())
        return super().answer(path, raw)

    def model_of(self, path: str, body: Mapping[str, Any]) -> str | None:
        model = body.get("model")
        return model if isinstance(model, str) and model else None

    def _new_id(self, prefix: str) -> str:
        with self._state:
            self._counter += 1
            return f"{prefix}_{self._tag}{self._counter:04d}"

    def success(self, path: str, body: Mapping[str, Any], model: str, reply: Reply) -> tuple[int, Any]:
        config = _reasoning_config(body)
        include_field = body.get("include")
        include: list[Any] = include_field if isinstance(include_field, list) else []
        thinks = bool(config) and config.get("effort") != "none"
        output: list[dict[str, Any]] = []
        followers: list[dict[str, Any]] = []
        if reply.tool_calls:
            for name, arguments in reply.tool_calls:
                followers.append({"type": "function_call", "id": self._new_id("fc"), "call_id": self._new_id("call"),
                                  "name": name, "arguments": json.dumps(arguments), "status": "completed"})
        else:
            followers.append({"type": "message", "id": self._new_id("msg"), "status": "completed", "role": "assistant",
                              "content": [{"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []}]})
        reasoning_tokens = 0
        if thinks:
            rs_id = self._new_id("rs")
            summary = [reply.reasoning] if config.get("summary") else []
            encrypted = seal(self.mint, model, rs_id, followers[0]["id"], summary) if ENCRYPTED_INCLUDE in include else None
            output.append({"type": "reasoning", "id": rs_id,
                           "summary": [{"type": "summary_text", "text": text} for text in summary],
                           "encrypted_content": encrypted})
            reasoning_tokens = _tokens(reply.reasoning)
            with self._state:
                self._follower[rs_id] = followers[0]["id"]
                for item in followers:
                    if item["type"] == "function_call":
                        self._reasoning[item["id"]] = rs_id
        output += followers
        response_id = self._new_id("resp")
        if body.get("store", True) is not False:
            with self._state:
                self._stored.add(response_id)
        input_tokens = _tokens(json.dumps(body.get("input"), ensure_ascii=False)) + _tokens(str(body.get("instructions") or ""))
        visible = sum(_tokens(item.get("arguments", "")) for item in followers) if reply.tool_calls else _tokens(reply.text)
        output_tokens = visible + reasoning_tokens
        answer = {
            "id": response_id,
            "object": "response",
            "created_at": int(time.time()),
            "status": "completed",
            "error": None,
            "incomplete_details": None,
            "instructions": body.get("instructions"),
            "max_output_tokens": body.get("max_output_tokens"),
            "model": model,
            "output": output,
            "parallel_tool_calls": body.get("parallel_tool_calls", True),
            "previous_response_id": body.get("previous_response_id"),
            "reasoning": {"effort": config.get("effort"), "summary": config.get("summary")},
            "store": body.get("store", True),
            "temperature": body.get("temperature", 1.0),
            "text": body.get("text") or {"format": {"type": "text"}},
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools") or [],
            "top_p": body.get("top_p", 1.0),
            "truncation": body.get("truncation", "disabled"),
            "usage": {
                "input_tokens": input_tokens,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": output_tokens,
                "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
                "total_tokens": input_tokens + output_tokens,
            },
            "user": body.get("user"),
            "metadata": body.get("metadata") or {},
        }
        return 200, answer


def _tokens(text: str) -> int:
    # a stable, rough count (4 characters a token); the emulator's usage only has to be plausible
    return max(1, (len(text) + 3) // 4) if text else 0


def _no_stream() -> dict[str, Any]:
    return {"error": {"message": "this emulator does not stream: send the request with stream unset or false",
                      "type": "invalid_request_error"}}


def _not_found(path: str) -> dict[str, Any]:
    # plumbing, not a corpus rule: the emulator serves one endpoint
    return {"error": {"message": f"no such path {path}: this emulator serves POST .../responses",
                      "type": "invalid_request_error"}}


EMULATOR = ResponsesEmulator
