"""Reasoning codecs: read the reasoning a response carried, and encode it for replay.

A codec does two things for one provider family and nothing else:

* ``extract(message)`` turns ``response.choices[0].message`` (a litellm ``Message`` or a plain
  dict) into a :class:`StructuredReasoning`, or ``None`` when the message carried none;
* ``encode_for_replay(reasoning)`` returns the keys to merge into the next request's assistant
  message so the provider sees its own reasoning again (``{}`` when there is nothing to send).

Where litellm 1.110.2 puts reasoning (read in its source and measured against a loopback
server):

* Anthropic route: ``message.thinking_blocks`` holds the content blocks verbatim
  (``{type: thinking, thinking, signature}`` / ``{type: redacted_thinking, data}``) and
  ``message.reasoning_content`` their text. On the request side litellm forwards a history
  message's ``thinking_blocks`` as Anthropic content blocks ahead of text and tool_use.
* OpenAI-compatible routes (OpenRouter included): ``reasoning_content`` carries the text; an
  OpenRouter ``reasoning_details`` list appears only as
  ``message.provider_specific_fields["reasoning_details"]``, entries verbatim. Any extra key on
  a history message (``reasoning_details``, ``thinking_blocks``) is forwarded to the server
  unchanged.
* Gemini route: see :class:`GeminiReasoningCodec`.

Every codec refuses what it cannot interpret (:class:`ReasoningCodecError`, a ``ValueError``)
instead of dropping it.

One module per vendor (:mod:`.anthropic`, :mod:`.openai`, :mod:`.openai_responses` (the Responses API's
reasoning items), :mod:`.gemini`, :mod:`.reasoning_content`
for the open-weight families on OpenAI-compatible servers, and :mod:`.none` for routes without
reasoning); :mod:`.base` holds the contract and the message readers they share,
:mod:`.openrouter` the ``reasoning_details`` envelope Claude and Gemini both arrive in through
OpenRouter. Every public name stays importable from this package, where the policy registry
and third-party codecs find them.
"""

from capplan.executor.policies.reasoning_codec.anthropic import AnthropicReasoningCodec
from capplan.executor.policies.reasoning_codec.base import (
    ReasoningCodec,
    ForeignOrigin,
    ReasoningCodecError,
    ReplayScope,
    entry_list,
    left_signatures,
    message_field,
    provider_specific_field,
    reasoning_text,
    split_replayable,
)
from capplan.executor.policies.reasoning_codec.gemini import GeminiReasoningCodec
from capplan.executor.policies.reasoning_codec.none import NoReasoningCodec
from capplan.executor.policies.reasoning_codec.openai import OpenAIReasoningCodec
from capplan.executor.policies.reasoning_codec.openai_responses import OpenAIResponsesReasoningCodec
from capplan.executor.policies.reasoning_codec.reasoning_content import ReasoningContentCodec
from capplan.executor.policies.reasoning_codec.openrouter import (
    OPENROUTER_ENCRYPTED_TYPE,
    OPENROUTER_SUMMARY_TYPE,
    OPENROUTER_TEXT_TYPE,
    openrouter_blocks,
    openrouter_entries,
)

__all__ = [
    "OPENROUTER_ENCRYPTED_TYPE",
    "OPENROUTER_SUMMARY_TYPE",
    "OPENROUTER_TEXT_TYPE",
    "AnthropicReasoningCodec",
    "ForeignOrigin",
    "GeminiReasoningCodec",
    "NoReasoningCodec",
    "OpenAIReasoningCodec",
    "OpenAIResponsesReasoningCodec",
    "ReasoningCodec",
    "ReasoningCodecError",
    "ReasoningContentCodec",
    "ReplayScope",
    "entry_list",
    "left_signatures",
    "message_field",
    "openrouter_blocks",
    "openrouter_entries",
    "provider_specific_field",
    "reasoning_text",
    "split_replayable",
]
