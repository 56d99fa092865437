"""Joining (or starting) a Ray cluster for one run, with the run's code in its runtime env.

Ray is an optional extra: it is imported here, only when ``--backend ray`` is asked for, and
its absence is a usage error with the install command. Task environments travel as the job's
``working_dir``: the driver stages every environment's top-level module into one folder that
Ray uploads to the cluster's object store and unpacks on each node before a worker starts, so
a node needs nothing installed but capplan itself.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from capplan.trials.backends.cluster.credentials import CredentialsMissingError, missing, missing_message
from capplan.trials.usage_problem import UsageProblem

#: A started local cluster's object store: trial records are kilobytes, plans a few more.
LOCAL_OBJECT_STORE_BYTES = 256 * 1024 * 1024
#: Non-secret settings every worker needs (litellm would otherwise fetch its cost map online).
WORKER_ENV = {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}

_ADDRESS = re.compile(r"^(auto|ray://[^\s:/]+:\d+|[^\s:/]+:\d+)$")


class ClusterUsageError(UsageProblem):
    """A bad ``--address``, Ray missing, or a cluster the run cannot use; exit 2."""

    code = "CLUSTER"


def import_ray() -> ModuleType:
    """``ray``, or a usage error saying how to install it."""
    try:
        import ray
    except ImportError:
        raise ClusterUsageError(
            "--backend ray needs Ray, which is an optional extra: pip install 'capplan[ray]'"
        ) from None
    module: ModuleType = ray  # ray is skipped by mypy (pyproject), so the module object is typed here
    return module


def check_address(address: str | None) -> None:
    """``auto``, ``ray://host:port`` (Ray client) or ``host:port`` (a GCS address); None starts a local cluster."""
    if address is not None and not _ADDRESS.match(address):
        raise ClusterUsageError(
            f"--address {address!r} is not a Ray address; use 'auto' (the cluster this node belongs to), "
            "'ray://HOST:PORT' (Ray client) or 'HOST:PORT' (the head's GCS address)"
        )


@dataclass(frozen=True)
class EnvironmentSource:
    """Where one task environment's top-level module lives on the driver."""

    module: str  # the top-level module name (``desk`` for ``desk.env:Desk``)
    search_dir: Path  # the task file's folder, where the trial runner looks first


def stage_working_dir(sources: Iterable[EnvironmentSource], into: Path) -> list[str]:
    """Copy each environment's top-level module (package folder or ``.py``) into ``into``.

    A module found in neither its task folder nor as an installed module is left for the
    worker's import to report; two task packs with different modules of the same name are an
    error, because one working dir can hold only one.
    """
    staged: dict[str, Path] = {}
    for source in sources:
        candidates = [source.search_dir / source.module, source.search_dir / f"{source.module}.py"]
        found = next((c for c in candidates if c.exists()), None)
        if found is None:
            continue
        previous = staged.get(source.module)
        if previous is not None and previous.resolve() != found.resolve():
            raise ClusterUsageError(
                f"two task environments are both called {source.module!r} ({previous} and {found}); "
                "rename one package so both can travel to the cluster"
            )
        staged[source.module] = found
    for found in staged.values():
        target = into / found.name
        if found.is_dir():
            shutil.copytree(found, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(found, target)
    return sorted(staged)


def runtime_env(working_dir: Path | None, secret_names: Iterable[str]) -> dict[str, Any]:
    """The job's runtime env: the staged code and non-secret settings, never a credential."""
    env_vars = dict(WORKER_ENV)
    leaked = sorted(set(env_vars) & set(secret_names))
    if leaked:  # a guard on this module's own constant; a secret must never enter GCS tables
        raise AssertionError(f"runtime env would carry credential variables {leaked}")
    env: dict[str, Any] = {"env_vars": env_vars}
    if working_dir is not None:
        env["working_dir"] = str(working_dir)
    return env


class Session:
    """A connection to a cluster for the duration of one run; ``close`` disconnects."""

    def __init__(self, address: str | None, sources: Iterable[EnvironmentSource], secret_names: Iterable[str],
                 *, local_cpus: int | None = None) -> None:
        """``local_cpus``: logical CPUs of a local cluster this run starts (workers wait on the provider, so
        there may be more of them than cores)."""
        check_address(address)
        self.ray = import_ray()
        self._stage = Path(tempfile.mkdtemp(prefix="capplan-ray-code-"))
        modules = stage_working_dir(sources, self._stage)
        env = runtime_env(self._stage if modules else None, secret_names)
        if self.ray.is_initialized():
            # a caller (a test, a notebook) already joined a cluster: reuse it, its runtime env included
            self.owns_connection = False
        else:
            kwargs: dict[str, Any] = {"runtime_env": env, "log_to_driver": False}
            if address is None:
                kwargs.update(include_dashboard=False, object_store_memory=LOCAL_OBJECT_STORE_BYTES,
                              num_cpus=max(os.cpu_count() or 1, local_cpus or 0))
            else:
                kwargs["address"] = address
            try:
                self.ray.init(**kwargs)
            except (ConnectionError, ValueError, RuntimeError) as exc:
                self.close()
                raise ClusterUsageError(f"cannot join the Ray cluster at {address}: {exc}") from None
            self.owns_connection = True
        self.modules = modules

    def node_names(self) -> dict[str, str]:
        """Alive node id → its address, for progress and error messages."""
        return {n["NodeID"]: n["NodeManagerAddress"] for n in self.ray.nodes() if n.get("Alive")}

    def check_credentials(self, names: list[str]) -> None:
        """Ask every alive node which credential names it lacks; refuse the run if any does."""
        if not names:
            return
        ray = self.ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        probe = ray.remote(num_cpus=0)(missing)
        nodes = self.node_names()
        pending = {
            node: probe.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote(names)
            for node in nodes
        }
        lacking: dict[str, list[str]] = {}
        for node, ref in pending.items():
            result: list[str] = ray.get(ref, timeout=120)
            if result:
                lacking[f"node {nodes[node]} ({node[:8]})"] = result
        if lacking:
            raise CredentialsMissingError(missing_message(lacking))

    def close(self) -> None:
        """Disconnect (stopping a cluster this run started) and drop the staged code."""
        if getattr(self, "owns_connection", False) and self.ray.is_initialized():
            self.ray.shutdown()
        shutil.rmtree(self._stage, ignore_errors=True)

