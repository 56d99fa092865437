"""``trial run --workers N`` on the local backend: trials in worker processes, one writer, the same folder.

Real worker processes (``python -m capplan.trials.backends.processes.worker``) run the trials against
a loopback provider in this process through capplan's direct transport; the run folder is compared
with the one a single process writes. Every wait is bounded; nothing depends on speed.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from capplan.executor.plan import Plan
from capplan.trials.backends.local import LocalBackend
from capplan.trials.backends.processes.pool import MAX_LOST_ATTEMPTS, WorkerStartError
from capplan.trials.driver import RunRequest, build_specs, drive
from capplan.trials.report.progress import Progress
from capplan.trials.run_folder.folder import RunFolder
from capplan.trials.tasks import task_code
from tests.cli_runner import invoke
from tests.cluster.runs import folder_contents
from tests.fake_provider import FakeProvider, agent_answer, on_body, stateless_agent
from tests.trials.helpers import write_task

KEY = "sk-worker-processes-key"
ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 120.0


def direct_plan(max_tokens: int = 50) -> Plan:
    """The catalogue's gpt-4o (capplan's direct transport: no litellm to import in every worker), with an
    output cap, so --max-cost can bound it."""
    body = Plan.load(ROOT / "golden" / "plans" / "gpt-4o.json").body()
    body["request_defaults"] = {**body["request_defaults"], "max_tokens": max_tokens}
    return Plan.seal(body)


@pytest.fixture(autouse=True)
def credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)  # the worker processes inherit it
    monkeypatch.delenv("LLM_PROXY_BASE_URL", raising=False)


def _request(tmp_path: Path, out: str, base: str, *, trials: int = 3, concurrency: int = 4,
             tasks: list[Path] | None = None) -> RunRequest:
    plan = tmp_path / "agent.json"
    if not plan.exists():
        plan.write_bytes(direct_plan().to_bytes())
    paths = tasks or [write_task(tmp_path / "pack", task_id=f"count-{i}") for i in range(2)]
    return RunRequest(tasks=paths, plans=[plan], out=tmp_path / out, trials=trials, concurrency=concurrency,
                      api_base=base)


def _drive(request: RunRequest, backend: LocalBackend) -> Any:
    return drive(build_specs(request), RunFolder(request.out), backend, concurrency=request.concurrency,
                 max_cost=None, progress=Progress(live=False))


def _without_command(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _without_command(v) for k, v in data.items() if k != "command"}
    if isinstance(data, list):
        return [_without_command(v) for v in data]
    return data


def _journal(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "calls.jsonl").read_text().splitlines()]


@pytest.mark.fast_side
def test_two_worker_processes_write_the_same_run_folder_as_one_process(tmp_path: Path) -> None:
    import subprocess
    import sys

    backends = {"one": LocalBackend(workers=1), "two": LocalBackend(workers=2)}
    with FakeProvider(stateless_agent) as fake:
        for name, backend in backends.items():
            outcome = _drive(_request(tmp_path, name, fake.base), backend)
            assert outcome.finished == 6 and not outcome.interrupted
            # the task-code workers kept from one trial to the next end with the run
            assert task_code._idle == []
            assert not [t.name for t in threading.enumerate() if t.name.startswith(("task-code", "task-import"))]
        # the command line, whose process runs one thread when its workers start: they are forks of it
        request = _request(tmp_path, "forked", fake.base)
        done = subprocess.run(
            [sys.executable, "-c", "from capplan.cli import main; main()", "trial", "run", *map(str, request.tasks),
             "--plan", str(request.plans[0]), "--out", str(request.out), "--trials", "3", "--concurrency", "4",
             "--workers", "2", "--api-base", fake.base], capture_output=True, text=True, timeout=300,
            env={**os.environ, "OPENAI_API_KEY": KEY})
    assert done.returncode == 0, done.stderr
    assert "local: 2 worker process(es), forked in" in done.stderr
    stats = backends["two"].stats
    assert backends["one"].stats is None  # one process: the trials ran in this one
    assert stats is not None and stats.workers == 2 and len(set(stats.pids)) == 2 and os.getpid() not in stats.pids
    assert stats.lost_attempts == 0 and stats.restarts == 0
    assert not stats.forked  # this test's process runs the provider's threads: fresh interpreters
    one = folder_contents(tmp_path / "one")
    assert len([f for f in one if f.endswith("metrics.yaml")]) == 6
    for other in ("two", "forked"):
        contents = folder_contents(tmp_path / other)
        assert sorted(one) == sorted(contents), other
        for name in one:
            if name == "writer.lock":
                continue  # the pid of the process that wrote the folder
            if name == "run.json":  # the command line records itself; the rest of the run's identity is the same
                one[name], contents[name] = _without_command(one[name]), _without_command(contents[name])
            assert one[name] == contents[name], (other, name)
    # every send was journalled before it went out, once, by this process
    sends = [e for e in _journal(tmp_path / "two") if e["kind"] == "send"]
    assert len(sends) == len(fake.requests) // 3 == 24
    assert KEY not in "".join(p.read_text() for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".py")


def test_a_worker_killed_mid_trial_loses_only_its_attempts_which_run_again(tmp_path: Path) -> None:
    backend = LocalBackend(workers=2)
    with FakeProvider(stateless_agent) as fake:
        request = _request(tmp_path, "out", fake.base, trials=2, concurrency=4)
        fake.hold_after(0)  # every first call held: all four trials, two per worker, are mid-call at the kill
        killed: list[int] = []

        def kill_one_worker() -> None:
            try:
                deadline = time.monotonic() + WAIT_S
                while fake.held() < 4:
                    assert time.monotonic() < deadline, "the trials never all reached the provider"
                    time.sleep(0.02)
                assert backend.stats is not None
                killed.append(backend.stats.pids[0])
                os.kill(backend.stats.pids[0], signal.SIGKILL)
            finally:
                fake.release()

        killer = threading.Thread(target=kill_one_worker)
        killer.start()
        outcome = _drive(request, backend)
        killer.join(timeout=WAIT_S)
    assert killed and outcome.finished == 4 and not outcome.interrupted
    assert backend.stats is not None and backend.stats.restarts == 1 and backend.stats.lost_attempts == 2
    runs = [json.loads(line) for line in (tmp_path / "out" / "runs.jsonl").read_text().splitlines()]
    assert len(runs) == 4 and {r["status"] for r in runs} == {"completed"}  # each trial written once
    lost = {}
    for path in (tmp_path / "out" / "trials").rglob("metrics.yaml"):
        import yaml

        metrics = yaml.safe_load(path.read_text())
        lost[path.parent.relative_to(tmp_path / "out" / "trials").as_posix()] = metrics["lost_attempts"]
    assert sorted(lost.values()) == [0, 0, 1, 1]
    entries = _journal(tmp_path / "out")
    lost_lines = [e for e in entries if e["kind"] == "lost"]
    assert len(lost_lines) == 2
    # the lost executions' sends stay journalled (sent, outcome unknown); the reruns are new executions
    for line in lost_lines:
        reran = {e["execution"] for e in entries if e["key"] == line["key"] and e["kind"] == "end"}
        assert reran and line["execution"] not in reran


def test_a_trial_that_kills_its_worker_each_time_is_recorded_aborted_after_three_losses(tmp_path: Path) -> None:
    deadly = write_task(tmp_path / "pack", task_id="deadly", env_module="deadly_env")
    # the task's environment, whose add ends the process it runs in (as a crashing native library would)
    source = (tmp_path / "pack" / "deadly_env.py").read_text()
    (tmp_path / "pack" / "deadly_env.py").write_text(
        source + "\n\nimport os as _os\n\ndef _add(self, amount: int) -> dict:\n    _os._exit(7)\n\n"
                 "Counter.add = _add\n")
    healthy = write_task(tmp_path / "pack", task_id="healthy")
    backend = LocalBackend(workers=2)
    with FakeProvider(stateless_agent) as fake:
        outcome = _drive(_request(tmp_path, "out", fake.base, trials=1, concurrency=2, tasks=[deadly, healthy]),
                         backend)
    assert outcome.finished == 2 and not outcome.interrupted
    runs = {json.loads(line)["task_id"]: json.loads(line) for line in (tmp_path / "out" / "runs.jsonl").read_text().splitlines()}
    assert runs["healthy"]["status"] == "completed"
    assert (runs["deadly"]["status"], runs["deadly"]["termination_reason"]) == ("aborted", "infra_error")
    import yaml

    metrics = yaml.safe_load((tmp_path / "out" / "trials" / "gpt-4o" / "deadly" / "0" / "metrics.yaml").read_text())
    assert metrics["lost_attempts"] == MAX_LOST_ATTEMPTS
    trajectory = yaml.safe_load((tmp_path / "out" / "trials" / "gpt-4o" / "deadly" / "0" / "trajectory.yaml").read_text())
    assert "worker process died 3 times" in trajectory["termination"]["detail"]
    assert backend.stats is not None and backend.stats.lost_attempts == MAX_LOST_ATTEMPTS


def test_a_worker_that_cannot_start_stops_the_run_with_a_located_error(tmp_path: Path) -> None:
    backend = LocalBackend(workers=2, completion_factory="no_such_module_anywhere:sender")
    with FakeProvider(stateless_agent) as fake, pytest.raises(WorkerStartError) as failed:
        _drive(_request(tmp_path, "out", fake.base), backend)
    assert "exited with status 1 before it was ready" in failed.value.message
    assert failed.value.hint is not None and "--workers 1" in failed.value.hint
    assert fake.requests == []


def test_max_cost_holds_across_worker_processes(tmp_path: Path) -> None:
    """Every send reaches this process's budget before it leaves its worker: the stop is as tight as with threads."""
    tasks = [write_task(tmp_path / "pack", task_id=f"count-{i}", turns=["add one"]) for i in range(4)]
    plan = tmp_path / "agent.json"
    plan.write_bytes(direct_plan(max_tokens=5).to_bytes())
    out = tmp_path / "run"
    with FakeProvider(on_body(agent_answer)) as fake:
        # far below one trial's worth: the first sends reserve it all
        result = invoke("trial", "run", *map(str, tasks), "--plan", str(plan), "--out", str(out), "--trials", "2",
                        "--concurrency", "4", "--workers", "2", "--max-cost", "0.0001", "--api-base", fake.base)
        sent = len(fake.requests)
    assert result.exit_code == 1, result.output
    assert "budget stop" in result.output and "local: 2 worker process(es)" in result.output
    entries = _journal(out)
    sends = [e for e in entries if e["kind"] == "send"]
    assert len(sends) == sent  # nothing left a worker unjournalled
    assert sends and all(e["send"]["max_usd"] is not None and e["send"]["max_usd"] > 0 for e in sends)
    # the first send reserved more than the whole budget before it left its worker, and every later one,
    # from either worker, was refused there: one call went out, and the four running trials were stopped
    assert sent == 1
    manifest = json.loads((out / "run.json").read_text())
    assert sorted(manifest["interrupted"]) == [f"gpt-4o/count-{t}/{i}" for t in range(2) for i in range(2)]


def test_workers_from_the_environment_and_their_refusals(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    task = write_task(tmp_path / "pack")
    plan = tmp_path / "agent.json"
    plan.write_bytes(direct_plan().to_bytes())
    args = ["trial", "run", str(task), "--plan", str(plan), "--out", str(tmp_path / "run"),
            "--api-base", "http://127.0.0.1:9"]
    for bad in ("0", "two", "-3", "1.5", "9" * 5000):  # past int()'s digit limit: refused, not a traceback
        monkeypatch.setenv("CAPPLAN_WORKERS", bad)
        result = invoke(*args)
        assert result.exit_code == 2, result.output
        shown = bad if len(bad) <= 40 else bad[:40] + "…"
        assert f"$CAPPLAN_WORKERS={shown!r} is not a worker count" in result.output
        assert "Traceback" not in result.output and len(result.output) < 1000
        assert not (tmp_path / "run").exists()
    monkeypatch.setenv("CAPPLAN_WORKERS", "1")
    result = invoke(*args, "--address", "auto")
    assert result.exit_code == 2 and "--address applies only to --backend ray" in result.output
    result = invoke(*args, "--workers", "0")
    assert result.exit_code == 2 and "--workers" in result.output


@pytest.mark.fast_side
def test_ctrl_c_stops_the_workers_trials_and_the_same_command_resumes(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.trials.interrupts import interrupt, traced_child

    plan = tmp_path / "agent.json"
    plan.write_bytes(direct_plan().to_bytes())
    tasks = [str(write_task(tmp_path / "pack", task_id=f"count-{i}")) for i in range(2)]
    out = tmp_path / "run"
    env = {**os.environ, "OPENAI_API_KEY": KEY}
    env.pop("LLM_PROXY_BASE_URL", None)
    with FakeProvider(stateless_agent) as fake:
        args = ["trial", "run", *tasks, "--plan", str(plan), "--out", str(out), "--trials", "2", "--concurrency", "4",
                "--workers", "2", "--api-base", fake.base]
        fake.hold_after(0)  # every trial waits on its first call, in a worker, when Ctrl-C comes
        try:
            with traced_child(args, "from capplan.cli import main; main()", env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE) as (proc, handled):
                deadline = time.monotonic() + WAIT_S
                while fake.held() < 4:
                    assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else "exited"
                    assert time.monotonic() < deadline, "the trials never all reached the provider"
                    time.sleep(0.02)
                interrupt(proc, handled)  # the command's handler ran: the workers are told to stop
                fake.release()
                _, err = proc.communicate(timeout=WAIT_S)
        finally:
            fake.release()
        assert proc.returncode == 130, err.decode()
        assert b"run the same command again to resume" in err and b"local: 2 worker process(es), forked" in err
        manifest = json.loads((out / "run.json").read_text())
        assert sorted(manifest["interrupted"]) == [f"gpt-4o/count-{t}/{i}" for t in range(2) for i in range(2)]
        assert not (out / "runs.jsonl").exists() or (out / "runs.jsonl").read_text() == ""
        done = subprocess.run([sys.executable, "-c", "from capplan.cli import main; main()", *args], env=env,
                              capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    assert len((out / "runs.jsonl").read_text().splitlines()) == 4
    assert json.loads((out / "run.json").read_text())["interrupted"] == []


def test_the_python_api_takes_workers_and_refuses_a_count_below_one(tmp_path: Path) -> None:
    import capplan.trials
    from capplan.trials.usage_problem import UsageProblem

    task = write_task(tmp_path / "pack")
    plan = tmp_path / "agent.json"
    plan.write_bytes(direct_plan().to_bytes())
    with pytest.raises(UsageProblem, match="workers=0: give a whole number >= 1"):
        capplan.trials.run([task], [plan], out=tmp_path / "run", workers=0)
    assert not (tmp_path / "run").exists()
    with FakeProvider(stateless_agent) as fake:
        result = capplan.trials.run([task], [plan], out=tmp_path / "run", trials=2, concurrency=2, workers=2,
                                    api_base=fake.base)
    assert result.complete and result.finished == 2 and len(fake.requests) == 8


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text()
        found |= {int(child) for child in text.split()}
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads the process tree from /proc")
def test_workers_exit_when_the_command_that_started_them_is_killed(tmp_path: Path) -> None:
    import subprocess
    import sys

    plan = tmp_path / "agent.json"
    plan.write_bytes(direct_plan().to_bytes())
    task = write_task(tmp_path / "pack")
    env = {**os.environ, "OPENAI_API_KEY": KEY}
    with FakeProvider(stateless_agent) as fake:
        fake.hold_after(0)
        proc = subprocess.Popen([sys.executable, "-c", "from capplan.cli import main; main()", "trial", "run", str(task),
                                 "--plan", str(plan), "--out", str(tmp_path / "run"), "--trials", "2", "--concurrency",
                                 "2", "--workers", "2", "--api-base", fake.base],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + WAIT_S
            while fake.held() < 2:  # both trials mid-call, one in each worker
                assert proc.poll() is None and time.monotonic() < deadline, "the trials never reached the provider"
                time.sleep(0.02)
            workers = _children(proc.pid)
            assert len(workers) >= 2  # the two workers (and the record renderer, if it started)
            proc.kill()  # SIGKILL: the command cannot tell anyone
            proc.wait(timeout=WAIT_S)
            deadline = time.monotonic() + WAIT_S
            while any(_alive(pid) for pid in workers):
                assert time.monotonic() < deadline, f"workers {sorted(p for p in workers if _alive(p))} outlived it"
                time.sleep(0.02)
        finally:
            fake.release()
            if proc.poll() is None:
                proc.kill()


@pytest.mark.fast_side
def test_how_many_workers_a_run_gets() -> None:
    from capplan.trials.backends.local import usable_cores
    from capplan.trials.runner import RunContext
    from tests.mode_switch import mode

    cores = usable_cores()
    assert cores >= 1
    assert LocalBackend().worker_count(8) == 1  # the Python API's and a test's default: this process
    assert LocalBackend(workers=None).worker_count(10_000) == cores  # trial run's default: one per core
    assert LocalBackend(workers=None).worker_count(1) == 1  # never more than the trials in flight
    assert LocalBackend(workers=4).worker_count(3) == 3
    assert LocalBackend(RunContext(), workers=4).worker_count(8) == 1  # a caller's context lives here
    with mode(True):
        assert LocalBackend(workers=None).worker_count(8) == 1  # the reference mode's default: the plain path
        assert LocalBackend(workers=3).worker_count(8) == 3  # asked for: still honoured
