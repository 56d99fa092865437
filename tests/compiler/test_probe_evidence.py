"""An overlay's ``probe_evidence:`` block changes the plans on the measured route, and only those.

The entries are what ``capplan probe --out`` writes (tests/probes pin that side, against the
conformance emulators); here they are compiled, explained, linted, and refused when hostile.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import pytest

from capplan.compiler.compile import compile_paths
from capplan.compiler.inputs.probe_block import MAX_ROUTES
from capplan.compiler.lint import lint_file
from capplan.compiler.loading import Loaded, bundled_dir
from capplan.compiler.probe_evidence import stale_probe_evidence
from capplan.core.diagnostics import InputError
from tests.compiler.test_cli import invoke

FP = "ab" * 32
OPENAI_TEXT = "Unsupported value: 'required' is not supported with this model."
# two models of one provider and one protocol: the same preset, different routes (model names)
RUN = """models:
  gpt-4o: {provider: openai, name: gpt-4o}
  gpt-4o-mini: {provider: openai, name: gpt-4o-mini}
"""


def entry(model: str = "gpt-4o", *, values: str, date: str = "2026-11-02", protocol: str = "openai-chat",
          provider: str = "openai", extra: str = "") -> str:
    return f"""  - provider: "{provider}"
    protocol: "{protocol}"
    model: "{model}"
    gateway_route: null
    endpoint: "https://api.openai.com/v1/chat/completions"
    transport: "direct"
    date: "{date}"
    capplan_version: "0.1.0"
    plan: "{model}"
{extra}    values:
{values}"""


REFUSED = f"""      tool_choice:
        "required":
          outcome: refused
          status: 400
          error: "{OPENAI_TEXT}"
          fingerprint: "{FP}"
"""
ACCEPTED_TEMPERATURE = f"""      temperature:
        0.0:
          outcome: accepted
          status: 200
          fingerprint: "{FP}"
"""
PARALLEL = f"""      parallel_tool_calls:
        true:
          outcome: accepted
          status: 200
          fingerprint: "{FP}"
"""
# a hand-written reject for every openai model: the kind of rule a measurement contradicts
REJECT_ZERO = """providers:
  openai:
    params:
      param_value_rules:
        temperature:
          0: {action: reject, evidence: "2026-01-10, vendor docs: temperature 0 is refused"}
"""


@pytest.fixture
def run(write: Callable[[str, str], Path]) -> Path:
    return write("run.yaml", RUN)


def test_a_refusal_becomes_a_reject_on_its_route_only_with_the_measurement_as_evidence_and_provenance(
        write: Callable[[str, str], Path], run: Path) -> None:
    snippet = write("probe.yaml", "probe_evidence:\n" + entry(values=REFUSED))
    before = compile_paths(run_config=run).plans
    after = compile_paths(run_config=run, overlays=[snippet])
    rule = after.plans["gpt-4o"].param_value_rules["tool_choice"]["required"]
    assert rule.action == "reject"
    for part in ("2026-11-02", "capplan 0.1.0", "openai-chat https://api.openai.com/v1/chat/completions model gpt-4o",
                 "provider openai", f"sha256:{FP}", "HTTP 400", f'"{OPENAI_TEXT}"'):
        assert part in rule.evidence
    prov = after.plans["gpt-4o"].provenance["param_value_rules.tool_choice.required"]
    assert (prov.layer, prov.key) == ("probe-evidence:2026-11-02", "probe_evidence[0].values.tool_choice.required")
    # the same preset matches gpt-4o-mini, but it is another route: untouched, byte for byte
    assert after.plans["gpt-4o-mini"].fingerprint == before["gpt-4o-mini"].fingerprint
    assert after.plans["gpt-4o"].fingerprint != before["gpt-4o"].fingerprint
    assert not [w for w in after.warnings if w.code.startswith("probe-evidence")]
    code, out = invoke("explain", "gpt-4o", "param_value_rules", "--config", str(run), "--presets-file", str(snippet))
    assert code == 0
    assert "set by probe-evidence:2026-11-02" in out and f"{snippet}:" in out and OPENAI_TEXT in out


def test_an_acceptance_lifts_the_reject_on_its_route_and_explain_says_who_took_it_out(
        write: Callable[[str, str], Path], run: Path) -> None:
    rules = write("rules.yaml", REJECT_ZERO)
    snippet = write("probe.yaml", "probe_evidence:\n" + entry(values=ACCEPTED_TEMPERATURE))
    plans = compile_paths(run_config=run, overlays=[rules, snippet]).plans
    assert "temperature" not in plans["gpt-4o"].param_value_rules
    prov = plans["gpt-4o"].provenance["param_value_rules.temperature.0.0"]
    assert prov.layer == "probe-evidence:2026-11-02" and prov.file is not None and prov.file.endswith("probe.yaml")
    # another route keeps the hand-written reject: the acceptance was measured on gpt-4o only
    assert plans["gpt-4o-mini"].param_value_rules["temperature"]["0.0"].action == "reject"
    code, out = invoke("explain", "gpt-4o", "param_value_rules", "--config", str(run),
                       "--presets-file", str(rules), "--presets-file", str(snippet))
    assert code == 0, out
    assert "param_value_rules.temperature.0.0 = (removed)" in out and "probe-evidence:2026-11-02" in out


def test_a_hand_written_reject_the_route_confirms_carries_the_measurement_from_then_on(
        write: Callable[[str, str], Path], run: Path) -> None:
    rules = write("rules.yaml", REJECT_ZERO)
    refused = ACCEPTED_TEMPERATURE.replace("outcome: accepted", "outcome: refused").replace(
        "status: 200", 'status: 400\n          error: "temperature 0 is not supported"')
    snippet = write("probe.yaml", "probe_evidence:\n" + entry(values=refused))
    plans = compile_paths(run_config=run, overlays=[rules, snippet]).plans
    assert plans["gpt-4o"].param_value_rules["temperature"]["0.0"].evidence.startswith("2026-11-02, capplan 0.1.0 probe")
    assert plans["gpt-4o-mini"].param_value_rules["temperature"]["0.0"].evidence.startswith("2026-01-10, vendor docs")


def test_an_override_of_the_measured_value_stays_whatever_the_route_answered(
        write: Callable[[str, str], Path], run: Path) -> None:
    override = write("ops.yaml", """providers:
  openai:
    params:
      param_value_rules:
        tool_choice:
          required: {action: override, with: auto, evidence: "2026-09-12, acme gateway: required answers 400"}
""")
    snippet = write("probe.yaml", "probe_evidence:\n" + entry(values=REFUSED))
    plan = compile_paths(run_config=run, overlays=[override, snippet]).plans["gpt-4o"]
    rule = plan.param_value_rules["tool_choice"]["required"]
    assert (rule.action, rule.with_) == ("override", "auto")
    assert plan.provenance["param_value_rules.tool_choice.required"].layer.startswith("overlay:")


def test_a_later_overlay_measurement_of_the_same_value_replaces_an_earlier_one(
        write: Callable[[str, str], Path], run: Path) -> None:
    first = write("first.yaml", "probe_evidence:\n" + entry(values=REFUSED))
    again = REFUSED.replace("outcome: refused", "outcome: accepted").replace("status: 400", "status: 200")
    again = "\n".join(line for line in again.splitlines() if "error:" not in line) + "\n"
    second = write("second.yaml", "probe_evidence:\n" + entry(values=again, date="2026-12-01"))
    plans = compile_paths(run_config=run, overlays=[first, second]).plans
    assert "tool_choice" not in plans["gpt-4o"].param_value_rules
    # the earlier refusal left nothing behind, and the acceptance had no rule to lift
    assert "param_value_rules.tool_choice.required" not in plans["gpt-4o"].provenance


def test_a_configured_value_the_route_refuses_is_a_compile_error_naming_the_measurement(
        write: Callable[[str, str], Path]) -> None:
    run = write("run.yaml", "models:\n  gpt-4o: {provider: openai, name: gpt-4o, temperature: 0.0}\n")
    refused = ACCEPTED_TEMPERATURE.replace("outcome: accepted", "outcome: refused").replace(
        "status: 200", 'status: 400\n          error: "temperature 0 is not supported"')
    snippet = write("probe.yaml", "probe_evidence:\n" + entry(values=refused))
    with pytest.raises(InputError) as caught:
        compile_paths(run_config=run, overlays=[snippet])
    [diag] = [d for d in caught.value.diagnostics if d.code == "rejected-value"]
    assert diag.file == str(run) and "probe of openai-chat" in diag.message
    assert '"temperature 0 is not supported"' in diag.message and f"sha256:{FP}" in diag.message


@pytest.mark.parametrize(("changed", "reason"), [
    ({"provider": "azure"}, "another provider key"),
    ({"protocol": "openai-responses"}, "another protocol"),
    ({"model": "gpt-4.1"}, "another model name"),
])
def test_an_entry_no_plan_is_on_changes_nothing_and_is_a_warning_naming_the_measured_route(
        write: Callable[[str, str], Path], run: Path, changed: dict[str, str], reason: str) -> None:
    snippet = write("probe.yaml", "probe_evidence:\n" + entry(values=REFUSED, **changed))
    before = compile_paths(run_config=run).plans
    after = compile_paths(run_config=run, overlays=[snippet])
    assert {k: p.fingerprint for k, p in after.plans.items()} == {k: p.fingerprint for k, p in before.items()}, reason
    [warning] = [w for w in after.warnings if w.code == "probe-evidence-unused"]
    assert warning.severity == "warning" and warning.line == 2 and warning.path == "probe_evidence[0]"
    route = {"provider": "openai", "protocol": "openai-chat", "model": "gpt-4o", **changed}
    assert f"provider {route['provider']}, {route['protocol']}, model {route['model']}" in warning.message


def test_the_bundled_catalogue_has_no_probe_block_and_compiles_as_before() -> None:
    # the golden plans are the bundled inputs' (tests/compiler/test_golden_plans.py); none of them holds a
    # probe_evidence layer, so nothing there can have been changed by this feature
    plans = compile_paths().plans
    assert not [k for k, p in plans.items() if any(v.layer.startswith("probe-evidence") for v in p.provenance.values())]


# --- hostile blocks: located errors, exit 2, nothing written --------------------------------------

def _values(body: str) -> str:
    return "probe_evidence:\n" + entry(values=body)


HOSTILE: dict[str, tuple[str, str, str]] = {
    # name: (overlay text, code, path the error names)
    "block is a string": ("probe_evidence: everything\n", "wrong-type", "probe_evidence"),
    "entry is a list": ("probe_evidence:\n  - [1, 2]\n", "wrong-type", "probe_evidence[0]"),
    "planted key": ("probe_evidence:\n" + entry(values=REFUSED, extra="    run_this: rm -rf /\n"),
                    "unknown-key", "probe_evidence[0].run_this"),
    "unknown param": (_values(REFUSED.replace("tool_choice:", "seed:")), "", "probe_evidence[0].values.seed"),
    "unknown value": (_values(REFUSED.replace('"required":', '"ultra":')), "bad-rule-value",
                      "probe_evidence[0].values.tool_choice.ultra"),
    "number as a string": (_values(ACCEPTED_TEMPERATURE.replace("0.0:", '"zero":')), "wrong-type",
                           "probe_evidence[0].values.temperature.zero"),
    "no such day": ("probe_evidence:\n" + entry(values=REFUSED, date="2026-02-30"), "",
                    "probe_evidence[0].date"),
    "refusal on a 500": (_values(REFUSED.replace("status: 400", "status: 500")), "", "probe_evidence[0].values"),
    "refusal without text": (_values("\n".join(x for x in REFUSED.splitlines() if "error:" not in x) + "\n"), "",
                             "probe_evidence[0].values"),
    "status as text": (_values(REFUSED.replace("status: 400", 'status: "400"')), "wrong-type",
                       "probe_evidence[0].values.tool_choice.required.status"),
    "bad fingerprint": (_values(REFUSED.replace(FP, "not-a-hash")), "",
                        "probe_evidence[0].values.tool_choice.required.fingerprint"),
    "endpoint with a password": ("probe_evidence:\n" + entry(values=REFUSED).replace(
        "https://api.openai.com", "https://user:hunter2@api.openai.com"), "", "probe_evidence[0].endpoint"),
    "route listed twice": ("probe_evidence:\n" + entry(values=REFUSED) + entry(values=REFUSED),
                           "probe-evidence-duplicate", "probe_evidence[1]"),
    # YAML itself refuses 0 beside 0.0; true beside "true" reaches the value check
    "value measured twice": (_values(PARALLEL + PARALLEL.replace("      parallel_tool_calls:\n", "")
                                     .replace("true:", '"true":')), "probe-evidence-duplicate",
                             "probe_evidence[0].values.parallel_tool_calls.true"),
    "truncated": ("probe_evidence:\n" + entry(values=REFUSED)[:200] + '"\n', "", ""),
    "deep": ("probe_evidence:\n  - values:\n" + "".join("  " * (i + 3) + f"k{i}:\n" for i in range(200)), "", ""),
    "too many routes": ("probe_evidence:\n" + "  - {}\n" * (MAX_ROUTES + 1), "", "probe_evidence"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_probe_block_is_a_located_error_and_nothing_is_written(
        write: Callable[[str, str], Path], run: Path, tmp_path: Path, name: str) -> None:
    text, code, path = HOSTILE[name]
    snippet = write("probe.yaml", text)
    with pytest.raises(InputError) as caught:
        compile_paths(run_config=run, overlays=[snippet])
    errors = [d for d in caught.value.diagnostics if d.severity == "error" and d.file == str(snippet)]
    assert errors, caught.value.diagnostics
    if code:
        assert code in {d.code for d in errors}, errors
    if path:
        assert any(d.path.startswith(path) for d in errors), [d.path for d in errors]
    assert "hunter2" not in "\n".join(d.message for d in caught.value.diagnostics)
    out = tmp_path / "plans"
    status, output = invoke("compile", "--config", str(run), "--presets-file", str(snippet), "--out", str(out))
    assert status == 2 and str(snippet) in output
    assert not out.exists() or not any(out.iterdir())


# --- lint: age, dates, undated claims ---------------------------------------------------------------

def test_lint_warns_on_probe_evidence_older_than_the_configured_age_and_on_a_future_date(
        write: Callable[[str, str], Path]) -> None:
    today = dt.datetime.now(dt.UTC).date()
    old = (today - dt.timedelta(days=40)).isoformat()
    future = (today + dt.timedelta(days=3)).isoformat()
    recent = (today - dt.timedelta(days=2)).isoformat()
    text = ("probe_evidence_checks: {max_age_days: 30}\nprobe_evidence:\n" + entry(values=REFUSED, date=old)
            + entry("gpt-4o-mini", values=REFUSED, date=future) + entry("gpt-4.1", values=REFUSED, date=recent))
    path = write("probe.yaml", text)
    found = {(d.code, d.path) for d in lint_file(path)}
    assert found == {("probe-evidence-stale", "probe_evidence[0].date"), ("probe-evidence-date", "probe_evidence[1].date")}
    [stale] = [d for d in lint_file(path) if d.code == "probe-evidence-stale"]
    assert stale.severity == "warning" and stale.line == 9 and "40 days ago" in stale.message
    assert "probe_evidence_checks.max_age_days (30)" in stale.message and "--model gpt-4o" in (stale.hint or "")
    # the default age is 180 days
    loaded = lint_file(write("default.yaml", "probe_evidence:\n" + entry(values=REFUSED, date=old)))
    assert not loaded
    overlay_default = write("d2.yaml", "probe_evidence:\n" + entry(values=REFUSED, date="2025-01-01"))
    from capplan.compiler.inputs.overlay_file import OverlayFile
    from capplan.compiler.loading import load_file

    got, _ = load_file(overlay_default, OverlayFile, str(overlay_default))
    assert got is not None
    assert [d.code for d in stale_probe_evidence(Loaded(got.model, got.source), dt.date(2025, 6, 30))] == []
    assert [d.code for d in stale_probe_evidence(Loaded(got.model, got.source), dt.date(2025, 7, 1))] == [
        "probe-evidence-stale"]


def test_lint_warns_on_claims_whose_evidence_names_no_day(write: Callable[[str, str], Path]) -> None:
    path = write("ops.yaml", """providers:
  openai:
    params:
      param_value_rules:
        top_p:
          0.5: {action: reject, evidence: "seen it fail once"}
          0.9: {action: reject, evidence: "2026-10-01, acme gateway answered 400"}
litellm_models:
  acme/x:
    supports_function_calling: true
    evidence: "works for us"
""")
    found = [(d.code, d.path, d.line, d.severity) for d in lint_file(path)]
    assert found == [
        ("evidence-undated", "providers.openai.params.param_value_rules.top_p.0.5.evidence", 6, "warning"),
        ("evidence-undated", "litellm_models.acme/x.evidence", 11, "warning"),
    ]
    code, out = invoke("lint", str(path))
    assert code == 1 and "warning[evidence-undated]" in out


def test_the_bundled_presets_lint_without_an_undated_claim() -> None:
    # every value rule capplan ships names the day it was observed (three today)
    found = lint_file(bundled_dir() / "model_presets.yaml")
    assert not [d for d in found if d.code == "evidence-undated"]
