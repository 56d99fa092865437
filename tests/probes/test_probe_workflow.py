"""The scheduled probe workflow (``examples/ci/probe.yml``) and every ``capplan`` line in ``examples/ci``.

Every ``capplan`` command line in a workflow names options the real command has (and the probe
workflow's lines parse in full with the real parser). The probe step's script runs for real, in
bash, with the real ``capplan`` against a loopback provider the plans' own base-URL variable
points at: 0 when the route agrees (no pull request), 1 when it drifted (the evidence is written
and the pull-request step is switched on), and a missing key is exit 2, which fails the job
before any pull request. Secrets reach steps only through ``env:``, and no script names them.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import click
import pytest
import yaml

from capplan.cli import main
from tests.cli_runner import BIN, invoke_checked
from tests.fake_provider import FakeProvider, Reply, Request, openai_answer

ROOT = Path(__file__).resolve().parents[2]
CI = ROOT / "examples" / "ci"
PROBE = CI / "probe.yml"
CANARY = "sk-probe-workflow-canary-5e1f0c"
#: how long one run of the probe step may take (a bound for a broken run; it takes seconds)
STEP_TIMEOUT_S = 120
#: the shell's separators between commands (and redirections), where a capplan command line ends
SEPARATORS = {"|", "||", "&&", ";", "&", ">", ">>", "<", "(", ")", "2>", "2>&1"}


def workflow(path: Path) -> dict[str, Any]:
    data: dict[Any, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    # YAML 1.1 reads the key `on` as True
    if True in data:
        data["on"] = data.pop(True)
    return data


def steps(flow: dict[str, Any]) -> list[dict[str, Any]]:
    return [step for job in flow["jobs"].values() for step in job["steps"]]


def step(flow: dict[str, Any], step_id: str) -> dict[str, Any]:
    return next(s for s in steps(flow) if s.get("id") == step_id)


def capplan_lines(script: str) -> list[list[str]]:
    """The argument lists of every ``capplan`` command in a shell script (the shell's quotes taken off)."""
    found: list[list[str]] = []
    joined = re.sub(r"\\\n\s*", " ", script)  # line continuations
    for line in joined.splitlines():
        line = line.split(" #", 1)[0].strip()
        if line.startswith("#"):
            continue
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        current: list[str] | None = None
        for token in lexer:
            if token in SEPARATORS or set(token) <= set("|&;<>()"):
                if current:
                    found.append(current)
                current = None
            elif current is None:
                current = [] if token == "capplan" else None
                if current is None:
                    continue
            else:
                current.append(token)
        if current:
            found.append(current)
    return found


def expand(args: list[str], env: dict[str, str]) -> list[str]:
    """``$VAR`` and ``${VAR}`` replaced by the workflow's values; an argument that is one variable splits
    on spaces (``$PLAN_FILES``, unquoted in the script; the others hold no spaces); a variable the
    runner sets is a placeholder."""
    out: list[str] = []
    for arg in args:
        value = re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", lambda m: env.get(m.group(1), "RUNNER-VALUE"), arg)
        out.extend(value.split() if arg.startswith("$") and arg.count("$") == 1 else [value])
    return out


def command_of(args: list[str]) -> tuple[click.Command, list[str], str]:
    """The click command the arguments name (through groups), its own arguments, and its full name."""
    command: click.Command = main
    name = "capplan"
    rest = list(args)
    while isinstance(command, click.Group):
        assert rest, f"{name}: no subcommand"
        sub = command.get_command(click.Context(command, info_name=name), rest[0])
        assert sub is not None, f"{name} has no command {rest[0]!r}"
        name, command, rest = f"{name} {rest[0]}", sub, rest[1:]
    return command, rest, name


def every_capplan_line() -> list[tuple[str, list[str], dict[str, str]]]:
    lines = []
    for path in sorted(CI.glob("*.yml")):
        flow = workflow(path)
        for s in steps(flow):
            env = {**flow.get("env", {}), **s.get("env", {})}
            for args in capplan_lines(s.get("run", "")):
                lines.append((f"{path.name}: {s.get('name', s.get('id'))}", args, {k: str(v) for k, v in env.items()}))
    return lines


def test_every_capplan_line_in_the_ci_examples_names_options_the_command_has() -> None:
    lines = every_capplan_line()
    assert {where.split(":")[0] for where, _, _ in lines} == {"capplan.yml", "probe.yml"}
    for where, args, env in lines:
        command, rest, name = command_of(expand(args, env))
        known = {opt for p in command.params for opt in (*p.opts, *p.secondary_opts)} | {"--help"}
        for token in rest:
            if token.startswith("-") and token != "-":
                assert token.split("=", 1)[0] in known, f"{where}: `{name}` has no option {token}"


def test_the_probe_workflows_lines_parse_with_the_real_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    flow = workflow(PROBE)
    probe_lines = [(where, args, env) for where, args, env in every_capplan_line() if where.startswith("probe.yml")]
    assert len(probe_lines) == 2  # the dry run, and the check that writes the evidence
    for where, args, env in probe_lines:
        command, rest, name = command_of(expand(args, env))
        assert name == "capplan probe", where
        ctx = command.make_context("probe", rest)  # raises on an unknown option, a bad value, a missing argument
        assert ctx.params["max_requests"] == int(flow["env"]["MAX_REQUESTS"])
        assert ctx.params["max_cost"] == float(flow["env"]["MAX_COST"])
        assert [str(p) for p in ctx.params["plans"]] == flow["env"]["PLAN_FILES"].split()
    check = step(flow, "probe")["run"]
    [checked] = [args for args in capplan_lines(check)]
    assert {"--check", "--out", "--max-requests", "--max-cost"} <= set(checked)
    # the dry-run step runs as written, with no key in its environment (its step has none)
    where, dry, env = probe_lines[0]
    assert "--dry-run" in dry, where
    monkeypatch.chdir(ROOT)
    for name in ("OPENAI_API_KEY", "LLM_PROXY_BASE_URL", "LLM_PROXY_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    shown = invoke_checked(*expand(dry, env), expect=0).stdout
    assert re.fullmatch(r"\d+ request\(s\) planned, worst-case cost \$[0-9.]+; nothing was sent", shown.splitlines()[-1])


def test_the_workflow_is_scheduled_and_opens_a_pull_request_only_on_drift() -> None:
    flow = workflow(PROBE)
    assert [entry["cron"] for entry in flow["on"]["schedule"]] and "workflow_dispatch" in flow["on"]
    assert "pull_request" not in flow["on"]  # it runs the default branch's plans with live keys, never a fork's
    assert flow["permissions"] == {"contents": "write", "pull-requests": "write"}
    opening = next(s for s in steps(flow) if "gh pr create" in s.get("run", ""))
    assert opening["if"] == "steps.probe.outputs.drifted == 'true'"
    assert 'git add -- "$EVIDENCE"' in opening["run"]


def test_secrets_reach_steps_only_through_env_and_no_script_names_them() -> None:
    for path in sorted(CI.glob("*.yml")):
        flow = workflow(path)
        text = path.read_text(encoding="utf-8")
        assert "set -x" not in text and "xtrace" not in text, path.name
        for s in steps(flow):
            secret_vars = {name for name, value in (s.get("env") or {}).items()
                           if isinstance(value, str) and re.search(r"\$\{\{\s*(secrets\.|github\.token)", value)}
            run = s.get("run", "")
            assert "secrets." not in run and "github.token" not in run, f"{path.name}: {s.get('name')}"
            for name in secret_vars:  # capplan and gh read them from the environment; no script mentions them
                assert not re.search(rf"\${{?{name}\b", run), f"{path.name}: {s.get('name')} names ${name}"
            for value in (s.get("with") or {}).values():
                assert "secrets." not in str(value), f"{path.name}: {s.get('name')} passes a secret as an input"


# --- the probe step, run for real -----------------------------------------------------------------


def openai(request: Request) -> Reply | None:
    """OpenAI as the plans know it: the Responses route refuses gpt-5's temperature, the rest is taken."""
    body = request.body if isinstance(request.body, dict) else {}
    if request.path.endswith("/responses") and "temperature" in body:
        return Reply({"error": {"message": "Unsupported parameter: 'temperature' is not supported with this model.",
                                "type": "invalid_request_error", "param": "temperature", "code": None}}, 400)
    return openai_answer(request)


def changed_openai(request: Request) -> Reply | None:
    """The same, but chat completions stopped taking ``parallel_tool_calls: false`` (a value gpt-4o's plan sends)."""
    body = request.body if isinstance(request.body, dict) else {}
    if body.get("parallel_tool_calls") is False and request.path.endswith("/chat/completions"):
        return Reply({"error": {"message": "parallel_tool_calls is not supported with this model.",
                                "type": "invalid_request_error", "param": "parallel_tool_calls", "code": None}}, 400)
    return openai(request)


def run_probe_step(folder: Path, base_url: str, *, key: str | None) -> tuple[int, str, dict[str, str]]:
    """The probe step's script in bash, in a checkout-like ``folder``; (exit code, its output, $GITHUB_OUTPUT)."""
    flow = workflow(PROBE)
    probe_step = step(flow, "probe")
    for name in ("golden",):
        if not (folder / name).exists():
            (folder / name).symlink_to(ROOT / name)
    outputs, summary = folder / "github_output", folder / "step_summary"
    outputs.write_text("")
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("LLM_PROXY_", "OPENAI_", "GITHUB_"))}
    env.update({k: str(v) for k, v in flow["env"].items()})
    env.update({"PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}", "GITHUB_OUTPUT": str(outputs),
                "GITHUB_STEP_SUMMARY": str(summary), "OPENAI_BASE_URL": base_url})
    if key is not None:
        env["OPENAI_API_KEY"] = key
    done = subprocess.run(["bash", "-e", "-c", probe_step["run"]], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=STEP_TIMEOUT_S, check=False)
    written = dict(line.split("=", 1) for line in outputs.read_text().splitlines() if "=" in line)
    shown = done.stdout + done.stderr + (summary.read_text() if summary.exists() else "")
    return done.returncode, shown, written


@pytest.fixture(scope="module")
def route() -> Any:
    with FakeProvider() as fake:
        yield fake


def test_the_probe_step_passes_on_agreement_and_switches_the_pull_request_on_for_drift(route: FakeProvider,
                                                                                       tmp_path: Path) -> None:
    route.reset(scripts=True)
    route.responder = openai
    code, shown, written = run_probe_step(tmp_path, route.base, key=CANARY)
    assert (code, written) == (0, {"drifted": "false"}), shown
    assert "no drift" in shown
    route.responder = changed_openai
    code, shown, written = run_probe_step(tmp_path, route.base, key=CANARY)
    assert (code, written) == (0, {"drifted": "true"}), shown
    assert ('gpt-4o: parallel_tool_calls false: route refuses it with 400 '
            '"parallel_tool_calls is not supported with this model.": plan has no rule') in shown
    evidence = tmp_path / "evidence" / "probes"
    assert sorted(p.name for p in evidence.iterdir()) == [
        "gpt-4o.overlay.yaml", "gpt-4o.probe.json", "gpt-5.overlay.yaml", "gpt-5.probe.json"]
    assert CANARY not in shown
    assert all(CANARY not in p.read_text(encoding="utf-8") for p in evidence.iterdir())
    # every request carried the key from the step's environment, and the budget held
    assert {r.headers["authorization"] for r in route.requests} == {f"Bearer {CANARY}"}
    assert len(route.requests) <= 2 * int(workflow(PROBE)["env"]["MAX_REQUESTS"])


def test_a_missing_key_fails_the_step_with_exit_2_and_no_pull_request(route: FakeProvider, tmp_path: Path) -> None:
    route.reset(scripts=True)
    code, shown, written = run_probe_step(tmp_path, route.base, key=None)
    assert code == 2, shown
    assert "drifted" not in written
    assert not route.requests  # refused before anything was sent
    assert not (tmp_path / "evidence" / "probes").exists() or not any((tmp_path / "evidence" / "probes").iterdir())
