"""``capplan diff`` flags every change of which key a model sends where, in every format, and CI can fail on it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from capplan.compiler.diff.credential_routing import ROUTING_FIELDS
from capplan.core.errors import ExitCode
from tests.diff.conftest import invoke
from tests.diff.plans import Body, edit, write_catalogue

MODEL = "gpt-4o"
EVIL = "http://collector.example.net/v1"


@pytest.fixture
def sides(tmp_path: Path) -> tuple[Path, Path]:
    return write_catalogue(tmp_path / "old"), write_catalogue(tmp_path / "new")


def _set(path: tuple[str, ...], value: object) -> Callable[[Body], None]:
    def change(body: Body) -> None:
        node = body
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = value

    return change


def _reroute(body: Body) -> None:
    body["binding"]["binding"].update(endpoint=EVIL, api_key_env="GITHUB_TOKEN")


#: one edit per aspect: (plan field, new value)
ASPECTS = {
    "endpoint": (("binding", "binding", "endpoint"), EVIL),
    "endpoint variable": (("binding", "binding", "api_base_env"), "OPENAI_BASE"),
    "key variable": (("binding", "binding", "api_key_env"), "GITHUB_TOKEN"),
    "transport pin": (("binding", "binding", "kwargs_pin_transport"), True),
    "gateway": (("binding", "binding", "unroutable"), True),
    "binding": (("binding", "key"), "acme"),
}


@pytest.mark.parametrize("aspect", sorted(ASPECTS))
def test_each_routing_field_is_reported_in_its_own_json_section(sides: tuple[Path, Path], aspect: str) -> None:
    old, new = sides
    path, value = ASPECTS[aspect]
    assert path in ROUTING_FIELDS
    edit(new / f"{MODEL}.json", _set(path, value))
    out = invoke("diff", str(old), str(new), "--format", "json")
    assert out.code == 1
    doc = json.loads(out.stdout)
    assert doc["credential_routing_changed"] is True
    (entry,) = doc["credential_routing"]
    assert (entry["key"], entry["aspect"], entry["field"], entry["new"]) == (MODEL, aspect, ".".join(path), value)
    assert entry["check"] == "credential-routing"


def test_gateway_headers_are_routing_too(sides: tuple[Path, Path]) -> None:
    old, new = sides
    key = "kimi-k3"  # an OpenRouter model: its plan carries the attribution headers
    edit(new / f"{key}.json", _set(("openrouter", "referer"), "https://other.example"))
    doc = json.loads(invoke("diff", str(old), str(new), "--format", "json").stdout)
    assert [(e["key"], e["aspect"]) for e in doc["credential_routing"]] == [(key, "gateway header")]


def test_other_changes_are_not_routing(sides: tuple[Path, Path]) -> None:
    old, new = sides
    edit(new / f"{MODEL}.json", _set(("loop", "context_watermark"), 9000))
    edit(new / f"{MODEL}.json", _set(("binding", "binding", "rate_limit_patterns"), ["x"]))
    out = invoke("diff", str(old), str(new), "--format", "json", "--fail-on", "credential-routing")
    assert out.code == 1  # plans differ; nothing routes a credential differently
    doc = json.loads(out.stdout)
    assert (doc["credential_routing"], doc["credential_routing_changed"]) == ([], False)
    assert "CREDENTIAL ROUTING" not in invoke("diff", str(old), str(new)).stdout


def test_text_lists_the_section_first(sides: tuple[Path, Path]) -> None:
    old, new = sides
    edit(new / f"{MODEL}.json", _reroute)
    lines = invoke("diff", str(old), str(new)).stdout.splitlines()
    assert lines[1].startswith("CREDENTIAL ROUTING CHANGED (2)")
    assert lines[2].split()[:3] == [MODEL, "endpoint", "binding.binding.endpoint:"] and EVIL in lines[2]
    assert "key variable  binding.binding.api_key_env: null → \"GITHUB_TOKEN\"" in lines[3]


def test_markdown_has_a_distinct_section_before_the_counts(sides: tuple[Path, Path]) -> None:
    old, new = sides
    edit(new / f"{MODEL}.json", _reroute)
    out = invoke("diff", str(old), str(new), "--format", "markdown").stdout
    assert "### Credential routing changed" in out
    assert out.index("### Credential routing changed") < out.index("| models | count |")
    rows = [line for line in out.splitlines() if line.startswith(f"| `{MODEL}` | ")]
    assert any("| endpoint |" in r and EVIL in r for r in rows)
    assert any("| key variable |" in r and "GITHUB_TOKEN" in r for r in rows)


def test_github_annotations_have_their_own_code(sides: tuple[Path, Path]) -> None:
    old, new = sides
    edit(new / f"{MODEL}.json", _reroute)
    out = invoke("diff", str(old), str(new), "--format", "github")
    assert out.code == 1
    lines = out.stdout.splitlines()
    routing = [line for line in lines if "title=capplan credential-routing-changed::" in line]
    assert len(routing) == 2 and all(line.startswith("::warning ") for line in routing)
    assert all(line.startswith("::notice ") for line in lines if "title=capplan plan-changed::" in line)
    assert lines[-1].startswith("1 changed, 0 added, 0 removed")


def test_fail_on_credential_routing_is_exit_3_after_the_report(sides: tuple[Path, Path]) -> None:
    old, new = sides
    edit(new / f"{MODEL}.json", _reroute)
    for fmt in ("text", "markdown", "json", "github"):
        out = invoke("diff", str(old), str(new), "--format", fmt, "--fail-on", "credential-routing")
        assert out.code == ExitCode.CREDENTIAL_ROUTING == 3
        assert "GITHUB_TOKEN" in out.stdout  # the report is printed first
    assert invoke("diff", str(old), str(new)).code == 1  # without --fail-on: just "differs"
    summary = invoke("diff", str(old), str(new), "--summary", "--fail-on", "credential-routing")
    assert summary.code == 3 and "CREDENTIAL ROUTING CHANGED for: gpt-4o" in summary.stdout
    doc = json.loads(invoke("diff", str(old), str(new), "--summary", "--format", "json").stdout)
    assert doc["credential_routing"] == [MODEL]


def test_ignoring_the_binding_check_does_not_hide_routing(sides: tuple[Path, Path]) -> None:
    old, new = sides
    edit(new / f"{MODEL}.json", _reroute)
    out = invoke("diff", str(old), str(new), "--ignore", "binding", "--fail-on", "credential-routing")
    assert out.code == 3 and "CREDENTIAL ROUTING CHANGED (2)" in out.stdout


def test_a_new_model_on_a_new_route_is_flagged_and_on_a_known_route_is_not(sides: tuple[Path, Path]) -> None:
    old, new = sides
    (old / f"{MODEL}.json").unlink()  # gpt-4o is new, on the openai route gpt-5 and o3 already use
    doc = json.loads(invoke("diff", str(old), str(new), "--format", "json").stdout)
    assert doc["credential_routing"] == []
    edit(new / f"{MODEL}.json", _reroute)  # now new *and* on a route no old model used
    doc = json.loads(invoke("diff", str(old), str(new), "--format", "json").stdout)
    assert {(e["key"], e["field"], e["kind"]) for e in doc["credential_routing"]} >= {
        (MODEL, "binding.binding.endpoint", "added"), (MODEL, "binding.binding.api_key_env", "added")}


def test_url_userinfo_never_shows_in_any_format() -> None:
    """An old plan may predate the rule that endpoints carry no userinfo; its password is not printed."""
    from capplan.compiler.diff.model import Change, DiffReport, ModelDiff, RoutingChange
    from capplan.compiler.diff.render import FORMATS, render_report

    change = Change("binding", "binding.binding.endpoint", "http://u:PASS-CANARY@h.example/v1", EVIL)
    routing = RoutingChange(MODEL, "endpoint", Change("credential-routing", change.field, change.old, change.new))
    report = DiffReport("old", "new", ("binding",), (ModelDiff(MODEL, "a", "b", 2, 2, (change,)),),
                        credential_routing=(routing,))
    for fmt in FORMATS:
        text = render_report(report, fmt)
        assert "PASS-CANARY" not in text and "<redacted>" in text and EVIL in text, fmt
