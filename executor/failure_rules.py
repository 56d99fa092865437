"""Failure rules: answers a binding or gateway says mean "the setup is wrong", matched as data.

A rule (:class:`~capplan.executor.binding.FailureRule`) pairs an HTTP status with a text the
answerer is known to send, and cites where that text was seen. The executor never guesses from
prose on its own: every text it matches here is a rule's, carried by the plan's binding, by the
gateway configuration, or by :data:`LITELLM_PROTOCOL_RULES` (litellm's own fixed reports of an
answer that was not a provider response, read from its source).

Matching walks the error's ``__cause__`` chain: a link's HTTP status is the one off the wire
(:func:`~capplan.executor.rate_limit.wire_status`), its text is ``str(link)``, which quotes the
provider's error message on both transports. Texts are bounded before a regex sees them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from capplan.core.reference_mode import speed_memo
from capplan.executor.binding import FailureRule
from capplan.executor.rate_limit import cause_chain, wire_status

#: How much of an error's text a rule reads (a provider's message is quoted at most 2 000 characters).
MAX_MATCHED_CHARS = 8192

Rules = tuple[FailureRule, ...]

_LITELLM = "litellm 1.110.2"

#: litellm's own reports of a 2xx answer that was no chat completion: something other than the
#: provider answered (a captive portal's HTML page, a proxy's own JSON). The direct transport finds
#: the same facts itself (:mod:`capplan.executor.direct.response`); these make the litellm path agree.
LITELLM_PROTOCOL_RULES: Rules = (
    FailureRule.model_validate({
        "contains": "provider returned a response with no 'choices'", "class": "infrastructure",
        "problem": "a 200 answer with no choices: something other than the provider answered",
        "evidence": f"{_LITELLM} litellm_core_utils/llm_response_utils/convert_dict_to_response.py "
                    "_invalid_choices_message (read 2026-12-04)"}),
    FailureRule.model_validate({
        "pattern": r"Unable to get json response - Expecting value: line 1 column 1 \(char 0\)",
        "class": "infrastructure",
        "problem": "a 2xx answer that is not JSON from its first character (an HTML page: a captive portal, "
                   "a login page or a wrong base URL)",
        "evidence": f"{_LITELLM} llms/openai/chat/gpt_transformation.py 'Unable to get json response - {{e}}, "
                    "Original Response: …' (its own sender: OpenRouter, xAI) (read 2026-12-04)"}),
    FailureRule.model_validate({
        "pattern": r"Expecting value: line 1 column 1 \(char 0\), Received response - <APIResponse \[2\d\d ",
        "class": "infrastructure",
        "problem": "a 2xx answer that is not JSON from its first character (an HTML page: a captive portal, "
                   "a login page or a wrong base URL)",
        "evidence": f"{_LITELLM} llms/openai/openai.py 'error - {{e}}, Received response - {{raw}}, Type of "
                    "response - …' (the openai SDK routes), observed against a loopback page (2026-12-04)"}),
    FailureRule.model_validate({
        "pattern": r"[A-Za-z_]+Exception - Expecting value: line 1 column 1 \(char 0\)",
        "class": "infrastructure",
        "problem": "a 2xx answer that is not JSON from its first character (an HTML page: a captive portal, "
                   "a login page or a wrong base URL)",
        "evidence": f"{_LITELLM} the azure_ai route's 'Azure_aiException - Expecting value: line 1 column 1 "
                    "(char 0)' (an APIConnectionError), observed against a loopback page (2026-12-04)"}),
)


@speed_memo(maxsize=256)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _matches(rule: FailureRule, status: int | None, text: str) -> bool:
    if rule.status is not None and rule.status != status:
        return False
    if rule.contains is not None:
        return rule.contains in text
    return rule.pattern is not None and _compiled(rule.pattern).search(text) is not None


def matching_rule(exc: BaseException, rules: Iterable[FailureRule]) -> FailureRule | None:
    """The first rule (in the given order) that some link of ``exc``'s cause chain matches, else None."""
    rules = tuple(rules)
    if not rules:
        return None
    links = [(wire_status(link), str(link)[:MAX_MATCHED_CHARS]) for link in cause_chain(exc)]
    for rule in rules:
        if any(_matches(rule, status, text) for status, text in links):
            return rule
    return None
