"""The fast plan check accepts exactly what serialising would accept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from capplan.core.canonical import canonical_bytes
from capplan.executor.plan import Plan, PlanLoadError, PlanTamperedError
from capplan.executor.plan_integrity import canonical_and_sealed
from tests.executor.plans import make_plan


def written(tmp_path: Path, raw: bytes) -> Path:
    path = tmp_path / "plan.json"
    path.write_bytes(raw)
    return path


def test_a_compiled_plan_passes_and_loads_as_the_same_plan(tmp_path: Path) -> None:
    plan = make_plan()
    raw = plan.to_bytes()
    assert canonical_and_sealed(raw, json.loads(raw))
    assert Plan.load(written(tmp_path, raw)) == plan


def test_an_edited_body_fails_the_fast_check_and_is_refused_as_tampered(tmp_path: Path) -> None:
    raw = make_plan().to_bytes().replace(b'"gpt-test"', b'"gpt-other"', 1)
    assert not canonical_and_sealed(raw, json.loads(raw))
    with pytest.raises(PlanTamperedError):
        Plan.load(written(tmp_path, raw))


@pytest.mark.parametrize("where", ["first", "last-but-one"])
def test_a_moved_fingerprint_line_is_not_canonical(tmp_path: Path, where: str) -> None:
    plan = make_plan()
    raw = plan.to_bytes()
    line = b'\n  "fingerprint": "' + plan.fingerprint.encode() + b'",'
    body = raw.replace(line, b"", 1)
    if where == "first":
        moved = body.replace(b"{", b"{" + line, 1)
    else:
        cut = body.rindex(b'\n  "')
        moved = body[:cut] + line + body[cut:]
    data = json.loads(moved)
    assert data == json.loads(raw) and moved != canonical_bytes(data)
    assert not canonical_and_sealed(moved, data)
    with pytest.raises(PlanLoadError, match="not in canonical form"):
        Plan.load(written(tmp_path, moved))


def test_loading_the_same_bytes_twice_gives_the_verified_plan_and_edits_are_still_caught(tmp_path: Path) -> None:
    raw = make_plan().to_bytes()
    path = written(tmp_path, raw)
    assert Plan.load(path) is Plan.load(path)
    path.write_bytes(raw.replace(b'"gpt-test"', b'"gpt-other"', 1))
    with pytest.raises(PlanTamperedError):
        Plan.load(path)


def test_a_sealed_plan_writes_the_bytes_serialising_would_and_a_copy_serialises_afresh() -> None:
    plan = make_plan()
    assert plan.to_bytes() == canonical_bytes(plan.model_dump(mode="json", by_alias=True))
    changed = plan.model_copy(update={"effective_preset": "other"})
    assert b'"effective_preset": "other"' in changed.to_bytes()


def test_a_plan_compiled_before_a_defaulted_field_was_added_travels_as_its_own_bytes(tmp_path: Path) -> None:
    # a plan from before the binding's body limits: loading fills the defaults, but what a trial
    # spec carries must still be the bytes its fingerprint covers, or every trial is "tampered"
    from capplan.core.canonical import sha256_hex
    from capplan.executor.plan_integrity import with_fingerprint
    from capplan.trials.runner import plan_from_text

    body = make_plan().body()
    for name in ("max_response_bytes", "max_decoded_bytes"):
        del body["binding"]["binding"][name]
    raw_body = canonical_bytes(body)
    fingerprint = sha256_hex(raw_body)
    raw = with_fingerprint(raw_body, fingerprint)
    assert raw is not None
    plan = Plan.load(written(tmp_path, raw))
    assert plan.binding.binding.max_response_bytes == 64 * 1024 * 1024
    assert plan.to_bytes() == raw
    assert plan_from_text(plan.to_bytes().decode("utf-8"), fingerprint).fingerprint == fingerprint
