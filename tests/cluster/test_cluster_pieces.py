"""The Ray backend's pieces that need no cluster: staging, addresses, credentials by name, limits, the CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from capplan.cli.trial_limits import load_rate_limits, load_run_config
from capplan.core.diagnostics import InputError
from tests.cluster.runs import canary_plan, write_pack
from tests.executor.plans import make_plan
from capplan.trials.backends.cluster import session
from capplan.trials.backends.cluster.credentials import CredentialsMissingError, credential_names, require, secret_names
from capplan.trials.backends.cluster.limited_completion import LimitedCompletion, is_rate_limited, limit_lanes, retry_after_s
from capplan.trials.backends.cluster.session import ClusterUsageError, EnvironmentSource, check_address, runtime_env, stage_working_dir
from tests.cli_runner import invoke

REPO = Path(__file__).resolve().parents[2]


def test_environments_are_staged_as_one_working_dir(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "desk_env.py").write_text("X = 1\n")
    (tmp_path / "b" / "travel" / "__pycache__").mkdir(parents=True)
    (tmp_path / "b" / "travel" / "__init__.py").write_text("")
    (tmp_path / "b" / "travel" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    into = tmp_path / "stage"
    into.mkdir()
    sources = [EnvironmentSource("desk_env", tmp_path / "a"), EnvironmentSource("desk_env", tmp_path / "a"),
               EnvironmentSource("travel", tmp_path / "b"), EnvironmentSource("json", tmp_path / "a")]
    assert stage_working_dir(sources, into) == ["desk_env", "travel"]  # json is installed, not shipped
    assert sorted(p.relative_to(into).as_posix() for p in into.rglob("*")) == [
        "desk_env.py", "travel", "travel/__init__.py"]


def test_two_different_environments_with_one_name_are_refused(tmp_path: Path) -> None:
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "env.py").write_text(f"FROM = {folder!r}\n")
    with pytest.raises(ClusterUsageError, match="both called 'env'"):
        stage_working_dir([EnvironmentSource("env", tmp_path / "a"), EnvironmentSource("env", tmp_path / "b")],
                          tmp_path)


@pytest.mark.parametrize("address", ["auto", "ray://head.example:10001", "10.0.0.5:6379"])
def test_addresses_ray_understands_pass(address: str) -> None:
    check_address(address)


@pytest.mark.parametrize("address", ["ray://head", "http://head:8265", "head", "head:port"])
def test_other_addresses_are_usage_errors(address: str) -> None:
    with pytest.raises(ClusterUsageError, match="is not a Ray address"):
        check_address(address)


def test_the_runtime_env_carries_code_and_settings_never_a_credential(tmp_path: Path) -> None:
    env = runtime_env(tmp_path, ["OPENROUTER_API_KEY"])
    assert env == {"working_dir": str(tmp_path), "env_vars": {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}}
    with pytest.raises(AssertionError):
        runtime_env(None, ["LITELLM_LOCAL_MODEL_COST_MAP"])


def test_missing_ray_is_a_usage_error_with_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ClusterUsageError, match=r"pip install 'capplan\[ray\]'"):
        session.import_ray()


def test_credentials_are_named_by_the_plans_bindings_and_checked_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    plans = [canary_plan(), make_plan("openrouter", "x/y"), make_plan("mock", "echo")]
    assert credential_names(plans) == ["CAPPLAN_TEST_CANARY_KEY", "OPENROUTER_API_KEY"]
    assert secret_names(plans) == ["CAPPLAN_TEST_CANARY_KEY", "OPENROUTER_API_KEY", "OPENROUTER_API_KEYS",
                                   "OPENROUTER_KEY_FILE"]
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-secret-value")
    monkeypatch.delenv("CAPPLAN_TEST_CANARY_KEY", raising=False)
    with pytest.raises(CredentialsMissingError) as caught:
        require(["OPENROUTER_API_KEY", "CAPPLAN_TEST_CANARY_KEY"], "node n1")
    assert str(caught.value).startswith("CAPPLAN_TEST_CANARY_KEY not set on node n1")
    assert "sk-or-secret-value" not in str(caught.value)


class _Gate:
    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def acquire(self, provider: str, key: str | None) -> int:
        self.events.append(("acquire", provider, key))
        return 7

    def release(self, ticket: int, *, rate_limited: bool, retry_after_s: float | None) -> None:
        self.events.append(("release", ticket, rate_limited, retry_after_s))


class _RateLimited(Exception):
    status_code = 429

    class response:  # noqa: N801 - shaped like httpx.Response
        headers = {"retry-after": "3"}


def test_every_attempt_passes_the_gate_and_a_429_is_reported() -> None:
    gate = _Gate()
    plan = canary_plan()
    assert limit_lanes(plan) == ("openai", "CAPPLAN_TEST_CANARY_KEY")
    ok = LimitedCompletion(lambda **kw: kw["x"], gate, plan)
    assert ok(x=5) == 5

    def refuse(**kw: Any) -> Any:
        raise RuntimeError("wrapped") from _RateLimited()

    with pytest.raises(RuntimeError):
        LimitedCompletion(refuse, gate, plan)()
    assert gate.events == [("acquire", "openai", "CAPPLAN_TEST_CANARY_KEY"), ("release", 7, False, None),
                           ("acquire", "openai", "CAPPLAN_TEST_CANARY_KEY"), ("release", 7, True, None)]
    assert is_rate_limited(_RateLimited()) and retry_after_s(_RateLimited()) == 3.0
    assert not is_rate_limited(ValueError("429 tokens"))  # prose is not evidence


def test_a_lane_pauses_at_most_the_bindings_retry_after_cap() -> None:
    class AsksFiveMinutes(Exception):
        status_code = 429

        class response:  # noqa: N801 - shaped like httpx.Response
            headers = {"retry-after": "300"}

    def refuse(**kw: Any) -> Any:
        raise AsksFiveMinutes()

    gate = _Gate()
    with pytest.raises(AsksFiveMinutes):
        LimitedCompletion(refuse, gate, canary_plan())()
    assert gate.events[-1] == ("release", 7, True, 60.0)  # the binding's default retry_after_max_s, not 300


def test_rate_limits_come_from_the_run_config_with_located_did_you_mean(tmp_path: Path) -> None:
    config = tmp_path / "run.yaml"
    config.write_text(
        "models:\n  agent: {provider: openai, name: agent-model}\n"
        "rate_limits:\n"
        "  providers:\n    openai: {requests_per_minute: 600, max_concurrent: 8}\n"
        "    openruter: {requests_per_minute: 60}\n"
        "  keys:\n    OPENROUTER_API_KEY: {max_concurrent: 4}\n    CAPPLAN_TEST_CANARY_KYE: {max_concurrent: 1}\n"
    )
    with pytest.raises(InputError) as caught:
        load_rate_limits(load_run_config(config), [canary_plan()])
    rendered = [d.render() for d in sorted(caught.value.diagnostics)]
    assert rendered[0].startswith(f"{config}:6:5: error[unknown-provider]: rate_limits.providers.openruter")
    assert "did you mean 'openrouter'?" in rendered[0]
    assert rendered[1].startswith(f"{config}:9:5: error[unknown-key-variable]: rate_limits.keys.CAPPLAN_TEST_CANARY_KYE")
    assert "did you mean 'CAPPLAN_TEST_CANARY_KEY'?" in rendered[1]
    config.write_text(config.read_text().replace("openruter", "openrouter").replace("KYE", "KEY"))
    limits = load_rate_limits(load_run_config(config), [canary_plan()])
    assert limits.providers["openai"].requests_per_minute == 600
    assert limits.keys["CAPPLAN_TEST_CANARY_KEY"].max_concurrent == 1


def test_ray_options_on_the_local_backend_are_usage_errors(tmp_path: Path) -> None:
    tasks = write_pack(tmp_path / "pack", n_tasks=1)
    plan = tmp_path / "agent.json"
    plan.write_bytes(canary_plan().to_bytes())
    result = invoke("trial", "run", str(tasks[0]), "--plan", str(plan), "--out",
                    str(tmp_path / "out"), "--address", "auto")
    assert result.exit_code == 2
    assert "--address applies only to --backend ray" in result.output
    result = invoke("trial", "run", str(tasks[0]), "--plan", str(plan), "--out",
                    str(tmp_path / "out"), "--backend", "ray", "--address", "http://x:1")
    assert result.exit_code == 2
    assert "is not a Ray address" in result.output
    assert not (tmp_path / "out" / "runs.jsonl").exists()


def test_the_local_backend_never_imports_ray() -> None:
    code = ("import sys, capplan.cli.trial_cmd, capplan.trials.driver, capplan.trials.backends; "
            "from capplan.trials.backends import load_backend; load_backend('local'); "
            "assert 'ray' not in sys.modules, 'ray was imported'")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
