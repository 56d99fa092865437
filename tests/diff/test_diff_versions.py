"""Plans of an earlier plan_version: diffed when the shape allows, refused naming both versions otherwise."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from capplan.executor.plan import PLAN_VERSION
from tests.diff.conftest import invoke
from tests.diff.plans import catalogue_bytes, sealed, write_catalogue

FIXTURES = Path(__file__).resolve().parent / "fixtures"
V0 = FIXTURES / "plan_v0_gpt-4o.json"
V0_OLD_SHAPE = FIXTURES / "plan_v0_old_shape.json"
V1 = {key: FIXTURES / f"plan_v1_{key}.json" for key in ("gpt-4o", "o3")}


def test_fixtures_are_sealed_plans_of_version_0() -> None:
    for path in (V0, V0_OLD_SHAPE):
        body = json.loads(path.read_text(encoding="utf-8"))
        assert body["plan_version"] == 0 and PLAN_VERSION != 0
        assert sealed(body) == path.read_bytes(), f"{path.name} must carry a matching fingerprint (not tampered)"


def test_earlier_version_diffs_against_a_current_plan(tmp_path: Path) -> None:
    current = tmp_path / "gpt-4o.json"
    current.write_bytes(catalogue_bytes()["gpt-4o.json"])
    out = invoke("diff", str(V0), str(current), "--format", "json")
    assert out.code == 1
    doc = json.loads(out.stdout)
    (model,) = doc["models"]
    assert model["status"] == "changed"
    assert model["plan_version"] == {"old": 0, "new": PLAN_VERSION}
    assert f"plan_version changed from 0 to {PLAN_VERSION}; the shapes match, so fields are compared" in doc["notes"]
    fields = {c["field"]: (c["old"], c["new"]) for c in model["changes"]}
    assert fields["loop.default_max_turns"] == (50, None)
    assert fields["policies.params_policy.params.supports_seed"] == (None, True)
    text = invoke("diff", str(V0), str(current)).stdout
    assert f"plan_version: 0 → {PLAN_VERSION}" in text
    markdown = invoke("diff", str(V0), str(current), "--format", "markdown").stdout
    assert f"plan_version 0 → {PLAN_VERSION}" in markdown


def test_a_version_change_alone_is_a_difference(tmp_path: Path) -> None:
    body = json.loads(V0.read_text(encoding="utf-8"))
    body["plan_version"] = 1
    relabelled = tmp_path / "gpt-4o.json"
    relabelled.write_bytes(sealed(body))
    out = invoke("diff", str(V0), str(relabelled), "--format", "json")
    assert out.code == 1
    (model,) = json.loads(out.stdout)["models"]
    assert (model["status"], model["changes"]) == ("changed", [])


def test_version_1_plans_are_refused_by_the_executor_with_the_recompile_hint() -> None:
    from capplan.executor.plan import PlanLoadError, load_plan

    for path in V1.values():
        assert json.loads(path.read_text(encoding="utf-8"))["plan_version"] == 1
        assert sealed(json.loads(path.read_text(encoding="utf-8"))) == path.read_bytes()
        with pytest.raises(PlanLoadError) as caught:
            load_plan(path)
        assert (f"plan_version 1 is an older plan format; this capplan reads plan_version {PLAN_VERSION}: "
                "recompile it with `capplan compile`") in str(caught.value)


def test_a_version_1_folder_diffs_against_a_compiled_folder_and_its_manifest(tmp_path: Path) -> None:
    old = tmp_path / "v1"
    old.mkdir()
    for key, path in V1.items():
        shutil.copy(path, old / f"{key}.json")
    new = write_catalogue(tmp_path / "v2")
    for extra in new.glob("*.json"):
        if extra.stem not in V1 and extra.name != "manifest.json":
            extra.unlink()
    out = invoke("diff", str(old), str(new), "--format", "json")
    assert out.code == 1, out.stderr
    doc = json.loads(out.stdout)
    assert f"plan_version changed from 1 to {PLAN_VERSION}; the shapes match, so fields are compared" in doc["notes"]
    models = {m["key"]: m for m in doc["models"]}
    assert set(models) == set(V1)
    for model in models.values():
        assert model["plan_version"] == {"old": 1, "new": PLAN_VERSION}
        # v1 carried its inputs in the plan, v2 in the manifest: both are read as the same field; the
        # wire route is new since v1 (a plan without one sends through litellm), so adding it is a change;
        # so are the binding's failure rules and Retry-After cap (a v1 plan retried what they stop, waited up to 300 s)
        added = {("transport", "wire", "added"), ("binding", "binding.binding.failure_rules", "added"),
                 ("binding", "binding.binding.retry_after_max_s", "added"),
                 # and the response limits (a v1 plan read any body, however large)
                 ("binding", "binding.binding.max_response_bytes", "added"),
                 ("binding", "binding.binding.max_decoded_bytes", "added")}
        if model is models.get("o3"):
            # o3 moved to the Responses API since: its codec and its seed go with the route
            added |= {("policies", "policies.reasoning_codec.name", "modified"),
                      ("params", "policies.params_policy.params.supports_seed", "modified")}
        assert all(c["check"] == "inputs" or (c["check"], c["field"], c["kind"]) in added
                   for c in model["changes"]), model["changes"]
    inputs_of = {c["field"] for c in models["gpt-4o"]["changes"]}
    assert not any(f.startswith("inputs.presets.path") for f in inputs_of)  # bundled:… on both sides
    summary = json.loads(invoke("diff", str(old), str(new), "--summary", "--format", "json").stdout)
    assert {i["path"] for i in summary["inputs"]} <= {"bundled:model_presets.yaml", "bundled:providers.yaml",
                                                      "bundled:pricing.json", "bundled:catalogue.yaml"}


def test_folders_mixing_versions(tmp_path: Path) -> None:
    old = write_catalogue(tmp_path / "old")
    new = tmp_path / "new"
    shutil.copytree(old, new)
    shutil.copy(V0, old / "gpt-4o.json")
    out = invoke("diff", str(old), str(new))
    assert out.code == 1 and "gpt-4o: changed" in out.stdout and f"plan_version: 0 → {PLAN_VERSION}" in out.stdout


def test_incompatible_shape_fails_naming_both_versions(tmp_path: Path) -> None:
    current = tmp_path / "gpt-4o.json"
    current.write_bytes(catalogue_bytes()["gpt-4o.json"])
    old_shape, now = (V0_OLD_SHAPE, 0), (current, PLAN_VERSION)
    for (a, va), (b, vb) in ((old_shape, now), (now, old_shape)):
        out = invoke("diff", str(a), str(b))
        assert out.code == 2 and out.stdout == ""
        assert f"cannot compare {a} (plan_version {va}) with {b} (plan_version {vb})" in out.stderr
        assert f"{V0_OLD_SHAPE} does not have the shape of plan_version {PLAN_VERSION}" in out.stderr
        assert "allowed_openai_params: Field required" in out.stderr
        assert "recompile it with this capplan" in out.stderr


def test_an_old_shape_plan_on_one_side_only_is_listed_not_compared(tmp_path: Path) -> None:
    old = write_catalogue(tmp_path / "old")
    new = tmp_path / "new"
    shutil.copytree(old, new)
    shutil.copy(V0_OLD_SHAPE, new / "retired-model.json")
    out = invoke("diff", str(old), str(new), "--format", "json")
    assert out.code == 1
    retired = next(m for m in json.loads(out.stdout)["models"] if m["key"] == "retired-model")
    assert retired["status"] == "added" and retired["plan_version"] == {"old": None, "new": 0}


def test_a_string_plan_version_is_refused_with_the_recompile_hint(tmp_path: Path) -> None:
    current = tmp_path / "gpt-4o.json"
    current.write_bytes(catalogue_bytes()["gpt-4o.json"])
    edited = tmp_path / "edited.json"
    body = json.loads(current.read_text(encoding="utf-8"))
    edited.write_bytes(sealed({**body, "plan_version": str(PLAN_VERSION)}))
    out = invoke("diff", str(edited), str(current))
    assert out.code == 2
    assert f"{edited}: not a plan file: plan_version must be a whole number, not a string" in out.stderr
    assert "hint: plan files are written by capplan, never by hand: recompile it with `capplan compile`" in out.stderr
