"""Every Ray node must see the gateway (``LLM_PROXY_*``) exactly as the driver does.

A worker builds its clients from its own environment, so a node started without
``LLM_PROXY_BASE_URL`` would send its trials straight to the providers (unattributed spend),
one with another key or header set would bill another account, and one with a malformed value
would fail its first trial instead of the run. Before any trial is scheduled, the driver
resolves the gateway configuration itself, asks every node to do the same, and compares.

Nothing secret travels: each node answers, per variable, a digest of the value salted with a
random string minted for this check (so a digest cannot be looked up or compared across runs),
and the message of its resolution error if it has one (those never quote a value). A refusal
names the node and the variables that differ.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping
from typing import Any

from capplan.executor.gateway.config import VARIABLES, EnvSource, GatewayConfigError, resolve_gateway_config
from capplan.trials.usage_problem import UsageProblem


class GatewayMismatchError(UsageProblem):
    """A node resolves the gateway differently from the driver; the message names variables, never values."""

    code = "CLUSTER_GATEWAY"


def gateway_view(salt: str, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """This process's gateway variables as salted digests (None: unset), and its resolution error, if any."""
    source = EnvSource(env)
    digests: dict[str, str | None] = {}
    error: str | None = None
    try:
        raw = source.values(VARIABLES)
        digests = {name: hashlib.sha256(f"{salt}\0{name}\0{value.strip()}".encode()).hexdigest()
                   if value is not None and value.strip() else None for name, value in raw.items()}
        resolve_gateway_config(source)
    except GatewayConfigError as exc:
        error = str(exc)
    return {"digests": digests, "error": error}


def differences(driver: Mapping[str, Any], nodes: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One sentence per node whose view differs from the driver's."""
    found = []
    for node, view in sorted(nodes.items()):
        if view.get("error"):
            found.append(f"{node}: {view['error']}")
            continue
        ours, theirs = driver["digests"], view.get("digests", {})
        changed = [name for name in VARIABLES if ours.get(name) != theirs.get(name)]
        if changed:
            unset = [n for n in changed if theirs.get(n) is None]
            extra = [n for n in changed if ours.get(n) is None]
            other = [n for n in changed if n not in unset and n not in extra]
            parts = ([f"{', '.join(unset)} not set there"] if unset else []) + \
                ([f"{', '.join(extra)} set there but not on the driver"] if extra else []) + \
                ([f"{', '.join(other)} with another value"] if other else [])
            found.append(f"{node}: {'; '.join(parts)}")
    return found


def check_gateway(session: Any) -> None:
    """Refuse the run (:class:`GatewayMismatchError`) when a node's gateway differs from the driver's."""
    salt = secrets.token_hex(16)
    driver = gateway_view(salt)
    if driver["error"]:
        return  # the driver's own clients raise it, located, before any trial runs
    ray = session.ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    probe = ray.remote(num_cpus=0)(gateway_view)
    nodes = session.node_names()
    pending = {node: probe.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote(salt)
               for node in nodes}
    views = {f"node {nodes[node]} ({node[:8]})": ray.get(ref, timeout=120) for node, ref in pending.items()}
    found = differences(driver, views)
    if found:
        raise GatewayMismatchError(
            "Ray workers read the gateway from their own environment, and it differs from the driver's: "
            + "; ".join(found) + ". Export the same LLM_PROXY_* variables where `ray start` runs on each node "
            "(or unset them on the driver to call the providers directly everywhere)")
