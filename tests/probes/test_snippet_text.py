"""The snippet keeps a provider's error text exactly: a newline, a line separator or an emoji in it
reads back as the same characters, in the evidence the compiler writes from it."""

from __future__ import annotations

import yaml

from capplan.compiler.inputs.overlay_file import OverlayFile
from capplan.compiler.probe_evidence import evidence_sentence
from capplan.probes.evidence import Claim, Outcome, ProbeRecord, QuestionResult, RouteIdentity
from capplan.probes.snippet import snippet_text

ROUTE = RouteIdentity("openai-chat", "http://127.0.0.1:9/v1/chat/completions", "gpt-4o", "direct", "openai/gpt-gw")
TEXT = 'litellm.BadRequestError: "temperature"\n\nLiteLLM: failed\u2028here\u0085 \\ é 😀 \U000e0001 \x07'


def result(qid: str, param: str, key: str, outcome: Outcome) -> QuestionResult:
    return QuestionResult(qid, param, key, "ab" * 32, outcome, Claim("accepted", "the plan sends it"))


def test_an_error_text_with_line_breaks_and_unprintables_reads_back_exactly() -> None:
    record = ProbeRecord("gpt-4o", "f" * 64, "2026-12-05", "0.1.0", ROUTE, (
        result("max_tokens=16", "max_tokens", "16", Outcome("accepted", 200)),
        result("temperature=0", "temperature", "0.0", Outcome("refused", 400, TEXT)),
    ))
    text = snippet_text(record, "openai")
    assert "\n\n" not in text.split("probe_evidence:", 1)[1].rstrip("\n")  # the text's breaks stay escaped
    overlay = OverlayFile.model_validate(yaml.safe_load(text))
    [route] = overlay.probe_evidence
    value = route.values["temperature"][0.0]
    assert value.error == TEXT
    assert route.gateway_route == "openai/gpt-gw"
    assert '\\n\\nLiteLLM' in evidence_sentence(route, value)  # the sentence quotes it as JSON does
