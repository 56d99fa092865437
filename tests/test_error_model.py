"""One error model: every user-facing error is a ``UserError`` naming its own code, and the
command line maps exceptions to messages and exit codes in exactly one place (capplan.cli.errors).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from capplan import cli
from capplan.cli.errors import BUG_MESSAGE, CommandExit
from capplan.core.canonical import canonical_bytes, sha256_hex
from capplan.core.diagnostics import Diagnostic, InputError
from capplan.core.errors import ExitCode, UserError
from capplan.core.redaction import register_secrets
from tests.cli_runner import invoke
from tests.layer_modules import import_layers

REPO = Path(__file__).resolve().parents[1]
MOCK = REPO / "golden" / "plans" / "mock-echo.json"
TASK = REPO / "examples" / "trials" / "inventory_desk" / "inv-01-check-stock.yaml"
#: the layers whose errors a user reads (evals is a harness with its own command line)
LAYERS = ("core", "compiler", "executor", "trials", "probes", "cli")
CANARY = "sk-canary-error-model-7f3a9c2e51"


def _import_layers() -> None:
    import_layers(LAYERS)


def _subclasses(cls: type[UserError]) -> Iterator[type[UserError]]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def capplan_user_errors() -> list[type[UserError]]:
    _import_layers()
    return sorted({c for c in _subclasses(UserError) if c.__module__.startswith("capplan.")},
                  key=lambda c: f"{c.__module__}.{c.__qualname__}")


def test_every_user_error_names_its_own_code() -> None:
    classes = capplan_user_errors()
    names = {c.__qualname__ for c in classes}
    # the errors the issue names, wherever they live, are in the family
    assert {"InputError", "RegistryError", "PolicyParamsError", "GatewayConfigError", "RequestFileError",
            "PlanLoadError", "MissingCredentialError", "RunFolderMismatch", "DiffInputError",
            "DotenvError", "UsageProblem", "ReasoningConfigError", "ToolSchemaError"} <= names, names
    assert all(c.code != UserError.code for c in classes), [c for c in classes if c.code == UserError.code]
    # a code is declared by exactly one class; a subclass that declares none shares its family's
    declared: dict[str, str] = {}
    for c in classes:
        if "code" in vars(c):
            where = f"{c.__module__}.{c.__qualname__}"
            assert c.code not in declared, f"{where} and {declared[c.code]} both declare {c.code}"
            declared[c.code] = where
        assert isinstance(c.exit_code, ExitCode) and c.exit_code in (ExitCode.FINDINGS, ExitCode.INPUT), c


def test_executor_errors_import_no_gateway_and_no_lookup_table() -> None:
    import capplan.executor.errors as errors

    source = Path(errors.__file__).read_text(encoding="utf-8")
    assert "gateway" not in "".join(line for line in source.splitlines() if "import" in line)
    assert not hasattr(errors, "user_error")


# --- the one place: a throwaway command registered beside the real ones ----------------------


class _Refused(UserError):
    code = "TEST_REFUSED"
    exit_code = ExitCode.FINDINGS


@click.command("boom")
@click.argument("what")
def boom_cmd(what: str) -> None:
    """Raise what the test asks for."""
    if what == "located":
        raise _Refused("the widget is broken", location="w.yaml:3:7", hint="mend the widget")
    if what == "unlocated":
        raise _Refused("no widget at all")
    if what == "secret":
        raise _Refused(f"the server answered {CANARY}")
    if what == "input":
        raise InputError([Diagnostic("b.yaml", 9, 1, "x", "second"), Diagnostic("a.yaml", 2, 5, "y", "first"),
                          Diagnostic("a.yaml", 1, 1, "z", "a warning", severity="warning")])
    if what == "ctrl-c":
        raise KeyboardInterrupt
    if what == "findings":
        click.echo("1 finding")
        raise CommandExit(ExitCode.FINDINGS)
    raise RuntimeError("an internal invariant broke")


@pytest.fixture()
def boom(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(cli.COMMANDS, "boom", f"{__name__}:boom_cmd")


def test_a_located_user_error_prints_its_render_once_and_exits_with_its_code(boom: None) -> None:
    result = invoke("boom", "located")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == "w.yaml:3:7: error[TEST_REFUSED]: the widget is broken\n    hint: mend the widget\n"


def test_an_unlocated_user_error_is_placed_at_the_command(boom: None) -> None:
    result = invoke("boom", "unlocated")
    assert (result.exit_code, result.stderr) == (1, "capplan boom: error[TEST_REFUSED]: no widget at all\n")


def test_every_message_passes_the_redactor(boom: None) -> None:
    register_secrets([CANARY])
    result = invoke("boom", "secret")
    assert result.exit_code == 1 and CANARY not in result.output and "the server answered" in result.stderr


def test_an_input_error_prints_its_diagnostics_sorted_and_the_count(boom: None) -> None:
    result = invoke("boom", "input")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "a.yaml:1:1: warning[z]: a warning",
        "a.yaml:2:5: error[y]: first",
        "b.yaml:9:1: error[x]: second",
        "capplan: 2 error(s); nothing was written",
    ]


def test_ctrl_c_ends_with_130_and_one_line(boom: None) -> None:
    result = invoke("boom", "ctrl-c")
    assert result.exit_code == 130
    assert result.stderr.strip() == "capplan: interrupted" and "Traceback" not in result.output


def test_a_command_ending_with_findings_exits_with_their_status_and_adds_nothing(boom: None) -> None:
    result = invoke("boom", "findings")
    assert (result.exit_code, result.stdout, result.stderr) == (1, "1 finding\n", "")
    assert type(result.exit_code) is int  # the status leaves as a plain int, as sys.exit(1) did


def test_click_usage_errors_stay_clicks(boom: None) -> None:
    result = invoke("boom", "located", "--no-such-option")
    assert result.exit_code == 2 and "No such option" in result.stderr and "error[" not in result.stderr


def test_anything_else_is_reported_as_a_bug(boom: None) -> None:
    result = invoke("boom", "bug")
    assert result.exit_code == 1 and isinstance(result.exception, RuntimeError)
    assert BUG_MESSAGE in result.stderr


# --- the double prefix is gone: a resealed bad plan through trial run, gateway check and diff ---


def _resealed_bad_plan(tmp_path: Path) -> tuple[Path, int]:
    data = json.loads(MOCK.read_text(encoding="utf-8"))
    data["model"]["key"] = "../../escaped"
    body = {k: v for k, v in data.items() if k != "fingerprint"}
    plan = tmp_path / "bad.json"
    plan.write_bytes(canonical_bytes({**body, "fingerprint": sha256_hex(canonical_bytes(body))}))
    line = next(n for n, text in enumerate(plan.read_text(encoding="utf-8").splitlines(), 1)
                if '"key": "../../escaped"' in text)
    return plan, line


@pytest.mark.parametrize("command", ["trial run", "gateway check", "diff", "preview"])
def test_a_located_plan_error_prints_its_place_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     command: str) -> None:
    monkeypatch.chdir(tmp_path)
    plan, line = _resealed_bad_plan(tmp_path)
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}), encoding="utf-8")
    args = {
        "trial run": ["trial", "run", str(TASK), "--plan", str(plan), "--user-plan", str(MOCK), "--out", "runs"],
        "gateway check": ["gateway", "check", "--plan", str(plan)],
        "diff": ["diff", str(MOCK), str(plan)],
        "preview": ["preview", "--plan", str(plan), str(request)],
    }[command]
    env = {"LLM_PROXY_BASE_URL": "http://127.0.0.1:9/v1"} if command == "gateway check" else {}
    result = invoke(*args, env=env)
    assert result.exit_code == 2, result.output
    [first, *_] = result.stderr.splitlines()
    assert first.startswith(f"{plan}:{line}:"), first
    assert ": error[PLAN]: model.key: " in first, first
    assert first.count("error[") == 1 and not first.startswith("capplan"), first
    assert "Traceback" not in result.output and not (tmp_path / "runs").exists()

