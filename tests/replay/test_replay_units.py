"""The small rules, one by one: verdicts, settings fixes, lanes, redaction, prices, parsing."""

from __future__ import annotations

import pytest

from capplan.evals.reasoning_replay import redact
from capplan.evals.reasoning_replay.analysis.signals import Signal
from capplan.evals.reasoning_replay.analysis.verdicts import verdict
from capplan.evals.reasoning_replay.errors import UsageError
from capplan.evals.reasoning_replay.provider.lanes import id_prefix, lane_of
from capplan.evals.reasoning_replay.provider.pricing import DEFAULT_PRICE, load_prices_file
from capplan.evals.reasoning_replay.provider.ratelimit import limiter_for
from capplan.evals.reasoning_replay.provider.transport import decode
from capplan.evals.reasoning_replay.routes import ROUTES, resolve_route
from capplan.evals.reasoning_replay.store.jsonl import JsonlFile
from capplan.evals.reasoning_replay.wire.knobs import Knobs, fix_for


def sig(position: str, klass: str, delta: int | None = 0, step: str = "text", variant: str = "reasoning") -> Signal:
    return Signal(step, position, variant, klass, delta=delta, status=200 if delta is not None else 400)


@pytest.mark.parametrize("signals, expected", [
    ([sig("in_loop", "consumed", 300), sig("cross_turn", "consumed", 300)], "consumes-all-turns"),
    ([sig("in_loop", "ignored"), sig("cross_turn", "consumed", 300)], "consumes-all-turns"),
    ([sig("in_loop", "consumed", 300), sig("cross_turn", "ignored")], "in-loop-only"),
    ([sig("in_loop", "consumed", 300), sig("cross_turn", "rejected", None)], "in-loop-only"),
    ([sig("in_loop", "ignored"), sig("cross_turn", "partial", 80)], "accepted-ignored"),
    ([sig("in_loop", "ignored"), sig("cross_turn", "rejected", None)], "accepted-ignored"),
    ([sig("in_loop", "rejected", None), sig("cross_turn", "rejected", None)], "rejected"),
    ([sig("in_loop", "no-baseline", None)], "baseline-failed"),
    ([], "baseline-failed"),
    # opaque: a verbatim replay above 25 tokens counts; a dummy signature never does
    ([sig("cross_turn", "consumed", 40, "opaque", "verbatim")], "consumes-all-turns"),
    ([sig("in_loop", "consumed", 40, "opaque", "dummy_signature"),
      sig("in_loop", "ignored", 3, "opaque", "verbatim")], "accepted-ignored"),
])
def test_verdict_rules(signals, expected):
    assert verdict(signals) == expected


def test_settings_fixes_answer_the_parameter_the_400_names():
    k = Knobs(temperature=0.0, effort="low", effort_style="reasoning_effort")
    assert fix_for(k, "Unsupported parameter: 'temperature'").temperature is None
    assert fix_for(k, "Use 'max_completion_tokens' instead of 'max_tokens'").max_tokens_key == "max_completion_tokens"
    assert fix_for(k, "reasoning_effort is not supported").effort_style == "none"
    gemini = Knobs(effort="low", effort_style="gemini_level")
    assert fix_for(gemini, "thinking_level is not supported for this model").effort_style == "gemini_budget"
    assert fix_for(k, "model not found") is None
    assert fix_for(Knobs(temperature=None, effort_style="none", effort=None), "temperature and reasoning") is None


def test_lanes_by_response_id():
    nous, openai = ROUTES["nous"], ROUTES["openai-chat"]
    assert lane_of(nous, "gen-1745-abc") == "openrouter"
    assert lane_of(nous, "chatcmpl-9") == lane_of(nous, "msg_01x") == "direct"
    assert lane_of(nous, "", 400) == "unknown"
    assert lane_of(openai, "gen-123") == "direct"  # only the Portal has lanes
    assert id_prefix("0b5c6f1e-3a3b-4c1d-9e8f-123456789abc") == "uuid"
    assert (id_prefix("gen-17"), id_prefix("msg_01x"), id_prefix("")) == ("gen-", "msg_", "-")


def test_redaction_covers_the_value_and_echoed_slices():
    key = "sk-proj-abcdefghijklmnopqrstuvwxyz0123"
    redact.register(key)
    text = f"bad key {key}; starts {key[:12]}…; ends …{key[-12:]}"
    assert key[:12] not in redact.scrub(text) and key[-12:] not in redact.scrub(text)
    assert redact.scrub("nothing secret") == "nothing secret"


def test_prices_file_formats_and_errors(tmp_path):
    simple = tmp_path / "p.json"
    simple.write_text('{"m": [1.5, 6]}')
    assert load_prices_file(simple).lookup("m").completion == pytest.approx(6e-6)
    assert load_prices_file(simple).lookup("other") == DEFAULT_PRICE
    catalog = tmp_path / "c.json"
    catalog.write_text('{"data": [{"id": "v/m", "pricing": {"prompt": "0.000001", "completion": "0.000002"}}]}')
    assert load_prices_file(catalog).lookup("m").prompt == pytest.approx(1e-6)  # bare name answers too
    bad = tmp_path / "bad.json"
    bad.write_text('{"m": "cheap"}')
    with pytest.raises(UsageError, match="must be \\[input, output\\]"):
        load_prices_file(bad)
    with pytest.raises(UsageError, match="no such file"):
        load_prices_file(tmp_path / "missing.json")


def test_decode_unwraps_gemini_list_errors_and_flags_non_json():
    reply = decode(400, b'[{"error": {"code": 400, "message": "API key not valid."}}]', {})
    assert reply.error == "API key not valid." and not reply.ok
    html = decode(200, b"<html>oops</html>", {"Content-Type": "text/html"})
    assert not html.ok and html.error.startswith("non-JSON response (HTTP 200, text/html)")
    empty = decode(502, b"", {})
    assert "<empty body>" in empty.error


def test_torn_last_line_does_not_swallow_the_next_record(tmp_path):
    log = JsonlFile(tmp_path / "x.jsonl")
    log.path.write_text('{"a": 1}\n{"b": ')
    log.append({"c": 3})
    records, problems = log.read()
    assert records == [{"a": 1}, {"c": 3}] and len(problems) == 1 and "line 2" in problems[0]


def test_rate_limiter_is_shared_per_route_and_spaces_starts():
    first = limiter_for("route-a", 1000.0)
    assert limiter_for("route-a", 1000.0) is first and limiter_for("route-b", 1000.0) is not first
    first.wait()
    start = first._next
    first.wait()
    # booked one interval later; the tolerance is float rounding at monotonic-clock magnitudes (an ulp
    # of 3e4 s is ~4e-12 s, and the subtraction loses a few), never time
    assert first._next - start >= 0.001 - 1e-9


def test_named_routes_accept_overrides_and_refuse_a_foreign_kind():
    route = resolve_route("nous", base_url="http://127.0.0.1:1/v1")
    assert route.lanes and route.base_url == "http://127.0.0.1:1/v1"
    with pytest.raises(UsageError, match="speaks chat"):
        resolve_route("deepseek", kind="responses")
    assert resolve_route("local").key == ""
