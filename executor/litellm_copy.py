"""The copy of built kwargs that litellm receives: its own where it writes, shared where it only reads.

The built kwargs share the request builder's cached message and tool dicts with later builds (read-only
by contract), so litellm must not be handed them as they are: what it changes in a request would
reach the next one. ``copy.deepcopy`` of every request did that at a cost linear in the history, and
in pure Python: at 1 000 messages it was most of a turn through litellm.

On the OpenAI-compatible routes (litellm's OpenAI chat configuration, and ``litellm.responses`` on
the Responses wires) litellm writes into the kwargs dict and into each history item's own dict (it
sets a message's ``role`` when missing and rebinds its ``tool_calls`` to a copied list), and builds
new dicts and lists for everything below (``jsonify_tools``, ``_user_message_for_openai``,
``without_cache_control`` copy before they change). So those routes get :func:`shallow_history`:
a new kwargs dict, a new history list of copied item dicts, and a deep copy of every other value
(the tools, ``extra_body``, headers: small, whatever the history's length).
``tests/executor/test_history_cost.py`` sends long histories through real litellm and proves the
shared parts are untouched afterwards. A native route (Anthropic, Gemini, Bedrock, ...) runs
transformations this module does not vouch for and keeps the whole deep copy.

Seam *litellm history copy*: in the reference mode (:mod:`capplan.core.reference_mode`) every request
is deep-copied whole. Justified by ``benchmarks/history_cost.py`` (litellm path, 1 000 vs 30 messages).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from capplan.core.reference_mode import reference_mode
from capplan.executor.wire_dialect import is_responses, litellm_provider, protocol_of

#: the kwargs that carry a conversation's history: chat completions', the Responses API's
HISTORY_KEYS = frozenset({"messages", "input"})


def litellm_own_copy(kwargs: Mapping[str, Any], protocol: str | None) -> dict[str, Any]:
    """The kwargs litellm may change freely without touching ``kwargs`` or anything it shares.

    ``protocol`` is the plan's wire protocol (``None`` without a wire record): the narrow copy is made
    only where litellm's handling is the audited OpenAI-compatible one.
    """
    if reference_mode() or not _openai_compatible(kwargs, protocol):
        return copy.deepcopy(dict(kwargs))
    return shallow_history(kwargs)


def shallow_history(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """A new dict: the history lists as new lists of copied item dicts, every other value deep-copied."""
    out: dict[str, Any] = {}
    memo: dict[int, Any] = {}  # one deepcopy memo: values sharing an object still share their copy
    for key, value in kwargs.items():
        if key in HISTORY_KEYS and type(value) is list:
            out[key] = [item.copy() if type(item) is dict else copy.deepcopy(item, memo) for item in value]
        else:
            out[key] = copy.deepcopy(value, memo)
    return out


def _openai_compatible(kwargs: Mapping[str, Any], protocol: str | None) -> bool:
    if protocol is None:
        return False
    if is_responses(protocol):
        return True
    provider = litellm_provider(kwargs.get("custom_llm_provider"), str(kwargs.get("model", "")))
    return protocol == "openai-chat" and protocol_of(provider) == "openai-chat"
