"""The Ray backend on the session's local cluster, against a loopback provider through real litellm.

The tests run in file order and share the cluster; the last one greps everything Ray and
capplan wrote during the session for the canary credential.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from tests.cluster.conftest import RayCluster
from tests.fake_provider import FakeProvider, every_nth, rate_limited, stateless_agent
from tests.cluster.runs import canary_plan, folder_contents, write_pack
from capplan.trials.backends.local import LocalBackend
from capplan.trials.backends.ray_backend import RayBackend
from capplan.trials.driver import RunRequest, build_specs, drive
from capplan.trials.report.progress import Progress
from capplan.trials.run_folder.folder import RunFolder

REPO = Path(__file__).resolve().parents[2]


def _request(tmp_path: Path, out: str, base: str, *, tasks: int = 2, trials: int = 3, concurrency: int = 4) -> RunRequest:
    plan = tmp_path / "plans" / "agent.json"
    if not plan.exists():
        plan.parent.mkdir(parents=True)
        plan.write_bytes(canary_plan().to_bytes())
    paths = sorted((tmp_path / "pack").glob("*.yaml")) or write_pack(tmp_path / "pack", n_tasks=tasks)
    return RunRequest(tasks=paths, plans=[plan], out=tmp_path / out, trials=trials, concurrency=concurrency,
                      api_base=base)


def test_local_and_ray_backends_write_the_same_run_folder(ray_cluster: RayCluster, tmp_path: Path) -> None:
    with FakeProvider(stateless_agent) as fake:
        for name, backend in (("local", LocalBackend()), ("ray", RayBackend(workers=2))):
            request = _request(tmp_path, name, fake.base)
            outcome = drive(build_specs(request), RunFolder(request.out), backend, concurrency=4, max_cost=None,
                            progress=Progress(live=False))
            assert outcome.finished == 6 and not outcome.interrupted
        assert {r.headers.get("authorization", "") for r in fake.requests} == {f"Bearer {ray_cluster.canary}"}  # the key reached the workers by name
    assert isinstance(backend, RayBackend)
    assert sum(backend.stats.by_node.values()) == 6 and backend.stats.lost_attempts == 0
    local, remote = folder_contents(tmp_path / "local"), folder_contents(tmp_path / "ray")
    assert sorted(local) == sorted(remote)
    assert len([f for f in local if f.endswith("metrics.yaml")]) == 6
    for name in local:
        assert local[name] == remote[name], name


def test_a_worker_killed_mid_run_loses_and_duplicates_nothing(ray_cluster: RayCluster, tmp_path: Path) -> None:
    backend = RayBackend(workers=2)
    # a few 429s on the way, which the workers report to the limiter
    with FakeProvider(every_nth(11, rate_limited("0"), stateless_agent), delay_s=0.3) as fake:
        request = _request(tmp_path, "out", fake.base, trials=4)
        # two calls answered, then every call held: no trial (four calls) can finish before the kill,
        # so the four running trials, two on each worker, are all mid-call when worker 0 dies
        fake.hold_after(2)
        killed: list[int] = []

        def kill_one_worker() -> None:
            try:
                deadline = time.monotonic() + 120
                while not (backend.stats.workers and fake.held() >= 4):
                    assert time.monotonic() < deadline, "the trials never all reached the provider"
                    time.sleep(0.05)
                os.kill(backend.stats.workers[0].pid, signal.SIGKILL)
                killed.append(backend.stats.workers[0].pid)
            finally:
                fake.release()

        killer = threading.Thread(target=kill_one_worker, daemon=True)
        killer.start()
        outcome = drive(build_specs(request), RunFolder(request.out), backend, concurrency=4, max_cost=None,
                        progress=Progress(live=False))
        killer.join(timeout=120)
    assert len(killed) == 1
    assert outcome.finished == 8
    lines = [json.loads(x) for x in (request.out / "runs.jsonl").read_text().splitlines()]
    assert sorted(line["key"] for line in lines) == sorted({line["key"] for line in lines})  # no duplicate
    assert len(lines) == 8 and all(line["passed"] for line in lines)
    lost = {line["key"]: yaml.safe_load((request.out / line["dir"] / "metrics.yaml").read_text())["lost_attempts"]
            for line in lines}
    assert backend.stats.lost_attempts >= 1  # the kill landed while trials were running
    assert sum(lost.values()) == backend.stats.lost_attempts
    # the killed attempts' calls that reached the driver are in calls.jsonl, counted as died in flight
    journal = [json.loads(x) for x in (request.out / "calls.jsonl").read_text().splitlines()]
    died = RunFolder(request.out).died_in_flight()
    lost_lines = [e for e in journal if e["kind"] == "lost"]  # a kill before the first drain leaves none
    assert len(lost_lines) <= backend.stats.lost_attempts
    assert sorted(d.execution for d in died) == sorted(e["execution"] for e in lost_lines)
    # a died execution has journalled calls, or sends with no outcome (its agent total then unknown)
    assert all((d.calls >= 1 or d.unanswered_sends >= 1) and (d.agent_cost_usd is not None or d.unanswered_sends)
               for d in died)
    sends = [e for e in journal if e["kind"] == "send"]
    assert sends and {e["request_id"] for e in journal if e["kind"] == "call"} <= {e["send"]["request_id"] for e in sends}
    written = {e["execution"] for e in journal if e["kind"] == "end"}
    assert len(written) == 8 and all(e["execution"] in written or e["execution"] in {d.execution for d in died}
                                     for e in journal if e["kind"] == "call")
    for line in lines:  # a rerun trial is whole: every turn of its one recorded attempt
        assert line["turns"] == 4 and line["status"] == "completed"
    lanes = backend.stats.limiter["lanes"]
    assert lanes["provider:openai"]["rate_limited"] >= 1 and lanes["key:CAPPLAN_TEST_CANARY_KEY"]["rate_limited"] >= 1


def test_killed_driver_then_rerun_resumes_over_an_existing_cluster(ray_cluster: RayCluster, tmp_path: Path) -> None:
    with FakeProvider(stateless_agent, delay_s=0.2) as fake:
        request = _request(tmp_path, "out", fake.base, trials=5, concurrency=2)
        config = tmp_path / "run.yaml"  # one call at a time through the key, whichever worker makes it
        config.write_text("models:\n  agent: {provider: openai, name: agent-model}\n"
                          "rate_limits:\n  keys:\n    CAPPLAN_TEST_CANARY_KEY: {max_concurrent: 1}\n")
        command = [sys.executable, "-m", "capplan.cli", "trial", "run", *map(str, request.tasks),
                   "--plan", str(request.plans[0]), "--out", str(request.out), "--trials", "5",
                   "--concurrency", "2", "--api-base", fake.base, "--config", str(config),
                   "--backend", "ray", "--address", ray_cluster.gcs_address, "--workers", "1"]
        runs = request.out / "runs.jsonl"
        # a trial is four calls and two run at once: after 16 answers at least (16 - 2 * 3) // 4 = 2 trials
        # have finished and at most 4 can; every later call is held, so the kill always lands mid-run
        fake.hold_after(16)
        first = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 180
            while first.poll() is None:
                if runs.exists() and len(runs.read_text().splitlines()) >= 2:
                    break
                assert time.monotonic() < deadline, "no trial finished"
                time.sleep(0.05)
            assert first.poll() is None, first.communicate()[1].decode()[-3000:]
            first.kill()  # SIGKILL: no handler runs, the run folder is left as the crash left it
        finally:
            first.wait(timeout=30)
            fake.release()
        before = len(runs.read_text().splitlines())
        assert 2 <= before <= 4
        second = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr[-3000:]
    assert f"resuming: {before} of 10 trial(s) already finished" in second.stderr
    waited = re.search(r"ray: limiter key:CAPPLAN_TEST_CANARY_KEY: (\d+) call\(s\), 0 rate-limited, ([\d.]+) s waited",
                       second.stderr)
    assert waited is not None, second.stderr[-2000:]
    assert int(waited[1]) == 4 * (10 - before) and float(waited[2]) > 0  # two trials in flight took turns
    keys = [json.loads(x)["key"] for x in runs.read_text().splitlines()]
    assert len(keys) == 10 and len(set(keys)) == 10
    # the environment reached the cluster through the job's runtime env, not through a shared path
    shipped = list((ray_cluster.session_dir / "runtime_resources" / "working_dir_files").glob("*/cluster_counter_env.py"))
    assert shipped


def _files_containing(roots: list[Path], needle: bytes) -> tuple[int, list[str]]:
    scanned, hits = 0, []
    for root in roots:
        for path in root.rglob("*"):
            if not path.is_file() or path.is_symlink() or path.is_socket():
                continue
            try:
                data = path.read_bytes()
            except OSError:
                continue
            scanned += 1
            if needle in data:
                hits.append(str(path))
    return scanned, hits


def test_no_credential_value_in_anything_ray_or_capplan_wrote(
    ray_cluster: RayCluster, tmp_path_factory: pytest.TempPathFactory
) -> None:
    canary = ray_cluster.canary.encode()
    control = tmp_path_factory.mktemp("control")
    (control / "leak.log").write_bytes(b"Authorization: Bearer " + canary)
    scanned, hits = _files_containing([ray_cluster.session_dir, tmp_path_factory.getbasetemp()], canary)
    assert scanned > 50  # the session's logs and the run folders were really read
    assert hits == [str(control / "leak.log")]  # the planted copy is found, and nothing else
