"""A plan's policies and transport are made once and shared by every client of it."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from capplan.executor.client import Client
from capplan.executor.plan import Plan
from tests.executor.plans import make_plan


def test_new_clients_of_one_plan_warn_about_a_dropped_temperature_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    plan = make_plan(
        "anthropic", "claude-drop-once", params={"reasoning_via_thinking_kwarg": True, "drop_sampling_when_thinking": True},
        request_defaults={"temperature": 0.0, "reasoning": {"mode": "budget", "budget_tokens": 2048}},
    )
    path = tmp_path / "plan.json"
    path.write_bytes(plan.to_bytes())
    with caplog.at_level(logging.WARNING, logger="capplan.params"):
        for _ in range(3):
            Client(Plan.load(path), env={}).build({"messages": [{"role": "user", "content": "x"}]})
    assert caplog.text.count("not sending temperature") == 1


def test_clients_of_one_plan_share_policies_and_transport_but_not_caches() -> None:
    plan = make_plan()
    first, second = Client(plan, env={}), Client(plan, env={})
    assert first.policies is second.policies
    assert first.builder.transport is second.builder.transport
    assert first.builder.tool_memo is not second.builder.tool_memo


def test_clearing_the_plan_cache_makes_loads_and_clients_start_afresh(tmp_path: Path) -> None:
    from capplan.executor.plan_cache import clear_plan_cache

    path = tmp_path / "plan.json"
    path.write_bytes(make_plan(name="cache-cleared").to_bytes())
    plan = Plan.load(path)
    assert Plan.load(path) is plan  # the same bytes are verified once
    policies = Client(plan, env={}).policies
    clear_plan_cache()
    again = Plan.load(path)
    assert again is not plan and again == plan
    assert Client(plan, env={}).policies is not policies
    assert Client(plan, env={}).policies is Client(plan, env={}).policies
