"""The policy registry: built-ins plus entry points, loud on duplicates and unknown slots."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from capplan.executor.registry import BUILTIN_POLICIES, SLOTS, RegistryError, _merge, policy_class, policy_targets

REPO = Path(__file__).resolve().parents[2]


def test_family_policies_arrive_through_the_entry_point_group() -> None:
    targets = policy_targets()
    assert targets["schema_sanitizer"]["gemini_recursive"] == "capplan.executor.families.gemini:GeminiRecursiveSchema"
    assert targets["reasoning_codec"]["openai_summary_replay"].startswith("capplan.executor.families.")
    for slot, names in BUILTIN_POLICIES.items():
        assert all(not target.startswith("capplan.executor.families.") for target in names.values()), slot


def test_duplicate_name_fails_loud() -> None:
    with pytest.raises(RegistryError, match="duplicate policy name schema_sanitizer.strict"):
        _merge(BUILTIN_POLICIES, [("schema_sanitizer.strict", "x:Y", "thirdparty (capplan.policies)")])


def test_unknown_slot_and_malformed_name_fail_loud_together() -> None:
    with pytest.raises(RegistryError) as info:
        _merge(BUILTIN_POLICIES, [("sanitiser.mine", "x:Y", "a"), ("nodot", "x:Z", "b")])
    assert "unknown slot 'sanitiser'" in str(info.value) and "'<slot>.<name>'" in str(info.value)


@pytest.mark.parametrize("slot,name", [(s, n) for s in SLOTS for n in sorted(policy_targets()[s])])
def test_every_registered_policy_imports_into_its_slot(slot: str, name: str) -> None:
    cls = policy_class(slot, name)
    assert getattr(cls, "slot", slot) == slot
    assert cls.__doc__, f"{cls.__qualname__} needs a docstring saying why it exists"


def test_every_registered_policy_has_a_test() -> None:
    """A policy nobody tests is a policy nobody will notice breaking."""
    tests = "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "tests").rglob("test_*.py"))
    untested = []
    for slot in SLOTS:
        for name in policy_targets()[slot]:
            cls_name = policy_targets()[slot][name].rpartition(":")[2]
            if not re.search(rf"\b{cls_name}\b", tests):
                untested.append(f"{slot}.{name} ({cls_name})")
    assert untested == []
