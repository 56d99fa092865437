"""Credentials on a cluster travel by name only.

A plan's binding names the environment variables that hold its credentials; a Ray worker
reads them from its own process environment (inherited from ``ray start`` on its node, or
from the driver when the driver started a local cluster). No value is ever put in a plan, a
task argument, a runtime environment or the object store, so none can surface in Ray's logs,
its GCS tables or its dashboard. Before any trial is scheduled the driver asks every node
which of the names it lacks (names come back, never values), and a worker re-checks on start.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from capplan.executor.mock_provider import is_mock
from capplan.executor.plan import Plan
from capplan.trials.usage_problem import UsageProblem


class CredentialsMissingError(UsageProblem):
    """A node or worker lacks a credential variable a plan needs; the message names only variables."""

    code = "CLUSTER_CREDENTIAL"


def credential_names(plans: Iterable[Plan]) -> list[str]:
    """The env-var names whose values a run's calls need (the primary key of each non-mock binding)."""
    names = {
        plan.binding.binding.api_key_env
        for plan in plans
        if plan.binding.binding.api_key_env and not is_mock(plan.model.provider)
    }
    return sorted(n for n in names if n)


def secret_names(plans: Iterable[Plan]) -> list[str]:
    """Every env-var name a binding declares as holding a secret (key, rotation list, key file)."""
    names: set[str] = set()
    for plan in plans:
        binding = plan.binding.binding
        names.update(n for n in (binding.api_key_env, binding.api_keys_env, binding.key_file_env) if n)
    return sorted(names)


def missing(names: Iterable[str], env: Mapping[str, str] | None = None) -> list[str]:
    """The names that are unset or blank in ``env`` (this process's environment by default)."""
    env = os.environ if env is None else env
    return [name for name in names if not env.get(name, "").strip()]


def require(names: Iterable[str], where: str) -> None:
    """Refuse to run trials on a node without its credentials."""
    lacking = missing(names)
    if lacking:
        raise CredentialsMissingError(missing_message({where: lacking}))


def missing_message(by_node: Mapping[str, list[str]]) -> str:
    """One sentence per node naming the variables it lacks, and how to provide them."""
    lines = [f"{', '.join(names)} not set on {node}" for node, names in sorted(by_node.items())]
    return (
        "; ".join(lines)
        + ". Ray workers read credentials from their own environment: export them where `ray start` "
        "runs on each node (capplan never ships credential values to the cluster)"
    )
