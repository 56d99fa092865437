"""Every Ray node must resolve the gateway as the driver does: the comparison, and one real cluster."""

from __future__ import annotations

import json

import pytest

from capplan.trials.backends.cluster.gateway_check import GatewayMismatchError, differences, gateway_view
from tests.cluster.conftest import RayCluster

GATEWAY = {"LLM_PROXY_BASE_URL": "http://127.0.0.1:9/v1", "LLM_PROXY_API_KEY": "sk-gateway-check-key"}


def test_a_node_without_the_gateway_or_with_another_key_is_named_by_variable() -> None:
    driver = gateway_view("salt", GATEWAY)
    same = gateway_view("salt", dict(GATEWAY))
    bare = gateway_view("salt", {})
    other = gateway_view("salt", {**GATEWAY, "LLM_PROXY_API_KEY": "sk-another-key"})
    found = differences(driver, {"node a": same, "node b": bare, "node c": other})
    assert found == ["node b: LLM_PROXY_BASE_URL, LLM_PROXY_API_KEY not set there",
                     "node c: LLM_PROXY_API_KEY with another value"]
    assert "sk-" not in json.dumps([driver, bare, other]) + " ".join(found)  # digests and names only


def test_a_node_whose_gateway_does_not_resolve_says_why() -> None:
    broken = gateway_view("salt", {"LLM_PROXY_BASE_URL": "not a url"})
    [line] = differences(gateway_view("salt", GATEWAY), {"node d": broken})
    assert line.startswith("node d: ") and "LLM_PROXY_BASE_URL" in line and "not a url" not in line


def test_digests_are_salted_per_check() -> None:
    assert gateway_view("one", GATEWAY)["digests"] != gateway_view("two", GATEWAY)["digests"]


def test_a_driver_gateway_the_workers_lack_refuses_the_ray_run(ray_cluster: RayCluster,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from capplan.trials.backends.cluster.gateway_check import check_gateway
    from capplan.trials.backends.cluster.session import Session

    # the workers inherited the environment of ray.init, which had no gateway
    for name, value in GATEWAY.items():
        monkeypatch.setenv(name, value)
    session = Session(None, [], [])
    try:
        with pytest.raises(GatewayMismatchError, match=r"node .*: LLM_PROXY_BASE_URL, LLM_PROXY_API_KEY not set there"):
            check_gateway(session)
    finally:
        session.close()
