"""The cases the upstream comparison runs: conversations x call variants, for every catalogue model.

Standard library only: ``tools/upstream_oracle.py`` imports this inside a separate venv that has
tolokaforge but not capplan, and ``tests/upstream/`` imports it inside capplan's own. A
conversation is a capplan request file body without per-call settings; a variant is the model
block settings (the run config's, compiled into the plan) plus the per-call settings.

``case_digest`` is recorded beside each fixture, so editing a case without re-running the
oracle fails the comparison with the command to run instead of comparing against stale kwargs.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

#: a pydantic ``Dict[str, int]`` field: a scalar-valued typed dict-map
SET_STOCK: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "set_stock",
        "description": "Set the stock level of each SKU.",
        "parameters": {
            "type": "object",
            "title": "SetStock",
            "properties": {
                "levels": {
                    "type": "object",
                    "additionalProperties": {"type": "integer"},
                    "title": "Levels",
                    "description": "SKU -> units on hand.",
                },
                "warehouse": {"type": "string", "title": "Warehouse"},
            },
            "required": ["levels", "warehouse"],
        },
    },
}

#: a pydantic ``Decimal`` field: the number-or-numeric-string ``anyOf`` idiom
RECORD_PAYMENT: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "record_payment",
        "description": "Record a customer payment.",
        "parameters": {
            "type": "object",
            "title": "RecordPayment",
            "properties": {
                "order_id": {"type": "string", "title": "Order Id"},
                "amount": {
                    "anyOf": [{"type": "number"}, {"type": "string", "pattern": "^(?!^[-+.]*$)[+-]?0*\\d*\\.?\\d*$"}],
                    "title": "Amount",
                },
            },
            "required": ["order_id", "amount"],
        },
    },
}

TOOLS = [SET_STOCK, RECORD_PAYMENT]

_CALL = {
    "id": "call_01",
    "type": "function",
    "function": {"name": "set_stock", "arguments": "{\"levels\": {\"A-1\": 4, \"B-2\": 0}, \"warehouse\": \"north\"}"},
}
_RESULT = {"role": "tool", "tool_call_id": "call_01", "content": "{\"ok\": true}"}
_ASK = {"role": "user", "content": "Set A-1 to 4 and B-2 to 0 in the north warehouse, then record 12.50 for order 7."}
_NEXT = {"role": "user", "content": "Now record the payment."}

#: Claude's signed thinking on the native Anthropic route (litellm's thinking_blocks)
CLAUDE_NATIVE = {"blocks": [
    {"type": "thinking", "text": "Two SKUs; set both, then pay.", "signature": "EqQBCkYIARgCKkD-claude-signature-1"},
]}
#: the same reasoning as OpenRouter returns it for Claude (reasoning_details entries)
CLAUDE_OPENROUTER = {"blocks": [
    {"type": "reasoning_text", "text": "Two SKUs; set both, then pay.", "signature": "EqQBCkYIARgCKkD-claude-signature-1",
     "extras": {"format": "anthropic-claude-v1", "index": 0}},
]}
#: an OpenAI-family summary (reasoning_content only, nothing signed)
OPENAI_SUMMARY = {"blocks": [{"type": "summary_text", "text": "Set stock first, then the payment."}],
                  "summary": "Set stock first, then the payment."}
#: Gemini over OpenRouter: an opaque encrypted entry bound to the tool call by its id
GEMINI_ENCRYPTED = {"blocks": [
    {"type": "encrypted", "encrypted_data": "CiQB" + "x7Qm" * 60,
     "extras": {"format": "google-gemini-v1", "id": "call_01", "index": 0}},
]}


def _tool_turn(reasoning: dict[str, Any] | None) -> dict[str, Any]:
    turn: dict[str, Any] = {"role": "assistant", "content": "", "tool_calls": [_CALL]}
    if reasoning is not None:
        turn["reasoning"] = reasoning
    return turn


def _tool_loop(reasoning: dict[str, Any] | None) -> dict[str, Any]:
    return {"system": "You are an inventory and billing assistant.", "tools": TOOLS,
            "messages": [_ASK, _tool_turn(reasoning), _RESULT, _NEXT]}


_POLICY = "\n".join(
    f"Rule {i}: when a SKU named in the request is unknown, say so and do not guess its stock level "
    f"(warehouse policy section {i}, revision 3)." for i in range(1, 41)
)

CONVERSATIONS: dict[str, dict[str, Any]] = {
    "plain_chat": {
        "system": "You are a concise assistant.",
        "messages": [
            {"role": "user", "content": "Name a prime number between 10 and 20."},
            {"role": "assistant", "content": "13."},
            {"role": "user", "content": "And one between 20 and 30?"},
        ],
    },
    "tool_loop": _tool_loop(None),
    "tool_loop_claude_native_thinking": _tool_loop(CLAUDE_NATIVE),
    "tool_loop_claude_openrouter_reasoning": _tool_loop(CLAUDE_OPENROUTER),
    "history_from_openai": _tool_loop(OPENAI_SUMMARY),
    "history_from_gemini": _tool_loop(GEMINI_ENCRYPTED),
    "cache_heavy": {
        "system": "You are the warehouse assistant. Follow every rule below.\n" + _POLICY,
        "tools": TOOLS,
        "messages": [
            _ASK, _tool_turn(None), _RESULT,
            {"role": "assistant", "content": "Stock is set. Recording the payment next."},
            {"role": "user", "content": "Before that: which rules apply to unknown SKUs? " + "Quote them. " * 10},
            {"role": "assistant", "content": "Rules 1 to 40 all say the same: report unknown SKUs, never guess."},
            _NEXT,
        ],
    },
}

#: ``config``: settings of the run config's model block; ``call``: per-call settings.
#: ``tools``: the variant only makes sense beside tools; ``openrouter``: only for OpenRouter models.
VARIANTS: dict[str, dict[str, Any]] = {
    "defaults": {"config": {}, "call": {}},
    "sampling": {"config": {}, "call": {"temperature": 0.3, "top_p": 0.9, "seed": 11, "max_tokens": 1024}},
    "config_sampling": {"config": {"temperature": 0.7, "top_p": 0.5, "seed": 3, "max_tokens": 2048}, "call": {}},
    "tool_choice_auto": {"config": {}, "call": {"tool_choice": "auto"}, "tools": True},
    "tool_choice_required": {"config": {}, "call": {"tool_choice": "required"}, "tools": True},
    "tool_choice_none": {"config": {}, "call": {"tool_choice": "none"}, "tools": True},
    "parallel_tool_calls_off": {"config": {"parallel_tool_calls": False}, "call": {"tool_choice": "auto"},
                                "tools": True},
    "parallel_tool_calls_on": {"config": {"parallel_tool_calls": True}, "call": {}, "tools": True},
    "reasoning_off": {"config": {}, "call": {"reasoning": {"mode": "off"}}},
    "reasoning_adaptive_low": {"config": {}, "call": {"reasoning": {"mode": "adaptive", "effort_hint": "low"}}},
    "reasoning_adaptive_high": {"config": {}, "call": {"reasoning": {"mode": "adaptive", "effort_hint": "high"}}},
    "reasoning_budget": {"config": {}, "call": {"reasoning": {"mode": "budget", "budget_tokens": 4096}}},
    "reasoning_budget_effort": {"config": {},
                                "call": {"reasoning": {"mode": "budget", "budget_tokens": 4096, "effort_hint": "medium"}}},
    "config_reasoning_budget": {"config": {"reasoning": {"mode": "budget", "budget_tokens": 2048}}, "call": {}},
    "openrouter_pin": {"config": {"openrouter": {"provider_order": ["Together"], "allow_fallbacks": False}},
                       "call": {}, "openrouter": True},
}


def applies(variant: dict[str, Any], conversation: dict[str, Any], provider: str) -> bool:
    """Whether ``variant`` is run with ``conversation`` for a model of ``provider``."""
    if variant.get("tools") and not conversation.get("tools"):
        return False
    return not (variant.get("openrouter") and not provider.startswith("openrouter"))


def case_digest(conversation: dict[str, Any], variant: dict[str, Any], model: dict[str, Any]) -> str:
    """sha256 of one case's inputs, as recorded beside its fixture."""
    body = json.dumps({"conversation": conversation, "variant": variant, "model": model}, sort_keys=True)
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def model_config(catalogue_entry: dict[str, Any], variant: dict[str, Any]) -> dict[str, Any]:
    """The model block both engines are configured with: the catalogue's, then the variant's.

    ``temperature`` is always explicit: tolokaforge's ModelConfig defaults it to 0.0 and capplan's
    to unset, and the comparison is about what each engine does with the same configuration.
    """
    block = {k: v for k, v in catalogue_entry.items() if k in ("provider", "name", "temperature", "seed", "top_p",
                                                               "max_tokens", "reasoning", "openrouter",
                                                               "capabilities")}
    block.setdefault("temperature", None)
    block.update(variant["config"])
    return block
