"""The checker registry stays honest: every plan field has exactly one owner, names are the documented ones."""

from __future__ import annotations

from capplan.compiler.diff.checkers import CHECKERS, UNCHECKED_FIELDS
from capplan.compiler.diff.model import ABSENT
from capplan.compiler.diff.plan_files import RUN_FIELDS
from capplan.compiler.diff.walk import leaf_changes, lookup
from capplan.executor.plan import Plan
from tests.diff.plans import body_of

REQUIRED = {"policies", "params", "value_rules", "allowed_params", "binding", "routing", "loop", "pricing",
            "preset", "inputs"}


def _owners(path: tuple[str, ...]) -> list[str]:
    return [c.name for c in CHECKERS.values()
            if any(path[: len(p)] == p for p in c.owns) and not any(path[: len(e)] == e for e in c.excludes)]


def test_the_issue_s_checkers_exist() -> None:
    assert REQUIRED <= set(CHECKERS)


def test_every_plan_field_has_exactly_one_owner() -> None:
    for name in Plan.model_fields:
        if name in UNCHECKED_FIELDS:
            continue
        assert len(_owners((name,))) == 1, f"{name}: owners {_owners((name,))}"
    # the one split field: params_policy flags belong to `params`, everything else under policies to `policies`
    assert _owners(("policies", "params_policy", "params", "supports_seed")) == ["params"]
    assert _owners(("policies", "params_policy", "name")) == ["policies"]
    assert _owners(("policies", "cache_policy", "params", "x")) == ["policies"]


def test_every_leaf_of_a_real_plan_is_owned_once() -> None:
    body = body_of("kimi-k3")
    empty: dict[str, object] = {k: {} if isinstance(v, dict) else None for k, v in body.items()}
    for path, _, _ in leaf_changes(empty, body):
        if path[0] in UNCHECKED_FIELDS:
            continue
        assert len(_owners(path)) == 1, f"{'.'.join(path)}: owners {_owners(path)}"


def test_checker_declarations_are_documented() -> None:
    for name, checker in CHECKERS.items():
        assert checker.name == name and checker.description
        for prefix in checker.owns:
            assert prefix[0] in {*Plan.model_fields, *RUN_FIELDS}, f"{name} owns {prefix}, which is not a plan field"
    assert set(UNCHECKED_FIELDS) <= set(Plan.model_fields)


def test_lists_and_one_sided_mappings_compare_whole() -> None:
    old = {"a": [1, 2], "b": {"x": 1}, "c": 1}
    new = {"a": [2, 1], "d": {"y": {"z": 2}}, "c": True}
    assert list(leaf_changes(old, new)) == [
        (("a",), [1, 2], [2, 1]), (("b",), {"x": 1}, ABSENT), (("c",), 1, True), (("d",), ABSENT, {"y": {"z": 2}})]


def test_layer_lookup_walks_up_then_down() -> None:
    provenance = {
        "loop.context_watermark": {"layer": "preset:p", "file": "f.yaml", "key": "capplan.presets.p.context_watermark"},
        "openrouter.provider_order": {"layer": "preset:p", "file": "f.yaml",
                                      "key": "capplan.presets.p.openrouter_defaults.provider_order"},
        "openrouter.allow_fallbacks": {"layer": "preset:p", "file": "f.yaml",
                                       "key": "capplan.presets.p.openrouter_defaults.allow_fallbacks"},
        "binding": {"layer": "binding", "file": "providers.yaml", "key": "openai"},
        "x.a": {"layer": "one", "file": "f.yaml", "key": "capplan.presets.one.a"},
        "x.b": {"layer": "two", "file": "f.yaml", "key": "capplan.presets.two.b"},
    }
    found = lookup("binding.binding.endpoint", provenance)
    assert found is not None and found.layer == "binding"
    whole = lookup("openrouter", provenance)
    assert whole is not None and (whole.layer, whole.key) == ("preset:p", "capplan.presets.p.openrouter_defaults")
    assert lookup("x", provenance) is None  # two layers set parts of it: none is named
    assert lookup("loop.empty_retry_count", provenance) is None


def test_a_new_plan_field_needs_a_checker() -> None:
    """A new top-level plan field must be given to a checker (or to UNCHECKED_FIELDS, with a reason)."""
    known = {p[0] for c in CHECKERS.values() for p in c.owns} | set(UNCHECKED_FIELDS)
    assert set(Plan.model_fields) | set(RUN_FIELDS) == known  # run-level fields come from the manifest
    assert all(reason for reason in UNCHECKED_FIELDS.values())
