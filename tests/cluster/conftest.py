"""One local Ray cluster for the whole test session, and the canary credential its workers inherit.

The cluster is started once (two CPUs, no dashboard, a small object store) because starting
Ray costs seconds; it is shut down in teardown. The canary is exported before Ray starts so
every worker inherits it exactly as a node inherits credentials from ``ray start``: the tests
then grep everything Ray and capplan wrote for it.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

CANARY_ENV = "CAPPLAN_TEST_CANARY_KEY"


@dataclass(frozen=True)
class RayCluster:
    """The running test cluster."""

    gcs_address: str
    session_dir: Path
    canary: str


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[RayCluster]:
    import ray

    canary = "sk-canary-" + secrets.token_hex(16)
    previous = os.environ.get(CANARY_ENV)
    os.environ[CANARY_ENV] = canary
    context = ray.init(
        num_cpus=2,
        include_dashboard=False,
        object_store_memory=200 * 1024 * 1024,
        log_to_driver=False,
        runtime_env={"env_vars": {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}},
    )
    try:
        yield RayCluster(
            gcs_address=context.address_info["gcs_address"],
            session_dir=Path(context.address_info["session_dir"]),
            canary=canary,
        )
    finally:
        ray.shutdown()
        if previous is None:
            os.environ.pop(CANARY_ENV, None)
        else:
            os.environ[CANARY_ENV] = previous
