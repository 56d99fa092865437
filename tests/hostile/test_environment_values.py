"""Hostile environment values: every LLM_PROXY_* variable, the .env file, rotation keys and key
files, each through the real CLI (`gateway check`, `preview`, `send`).

Each bad value is an error naming the variable and the kind of problem, exit 2, no traceback,
nothing written, and never the value: a key pasted into the wrong variable must not come back
in the message that refuses it (CI prints these messages into logs anyone can read).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import Result

from capplan.executor.gateway.catalog import clear_catalog_cache
from capplan.executor.keys import MAX_KEY_FILE_BYTES
from tests.cli_runner import invoke_checked

REPO = Path(__file__).resolve().parents[2]
GATEWAY_PLAN = REPO / "golden" / "plans" / "gpt-4o.json"  # openai: routed through a gateway by default
ROTATING_PLAN = REPO / "golden" / "plans" / "claude-opus-4.7-openrouter.json"  # api_keys_env + key_file_env
REQUEST = {"messages": [{"role": "user", "content": "hi"}]}
CANARY = "sk-canary-pasted-0d9e4b"
#: the canary's telltale tail, which must not survive in any shape (lower-cased, split, quoted)
TAIL = "0d9e4b"
#: a base URL nothing listens on: a refusal must happen before any connection is tried
UNUSED = "http://127.0.0.1:9/v1"

#: Every variable the commands read that a test here sets; cleared before each test.
VARIABLES = (
    "LLM_PROXY_BASE_URL", "LLM_PROXY_API_KEY", "LLM_PROXY_HEADERS", "LLM_PROXY_REQUEST_ID_HEADER",
    "LLM_PROXY_PROVIDERS", "LLM_PROXY_PREFERRED_ROUTE", "LLM_PROXY_TRUST_NAMESPACE_WILDCARDS",
    "OPENAI_API_KEY", "OPENROUTER_API_KEY", "OPENROUTER_API_KEYS", "OPENROUTER_KEY_FILE", "ORDER_SECRET",
)


@pytest.fixture(autouse=True)
def _controlled_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # the working directory's .env is the test's own
    clear_catalog_cache()
    yield
    clear_catalog_cache()


def tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def run(tmp_path: Path, env: dict[str, str], *args: str) -> Result:
    """The CLI in-process with ``env`` added; asserts no traceback, no canary, nothing written."""
    before = tree(tmp_path)
    result = invoke_checked(*args, env=env)
    assert CANARY not in result.output and TAIL not in result.output, result.output
    assert tree(tmp_path) == before
    return result


def request_file(tmp_path: Path) -> Path:
    path = tmp_path / "request.json"
    path.write_text(json.dumps(REQUEST))
    return path


def check(tmp_path: Path, env: dict[str, str]) -> Result:
    return run(tmp_path, env, "gateway", "check", "--plan", str(GATEWAY_PLAN))


def the_error(result: Result, where: str, code: str) -> str:
    """The one error line, located at ``where`` with ``code``."""
    lines = [line for line in result.output.splitlines() if "error[" in line]
    assert len(lines) == 1, result.output
    assert lines[0].startswith(f"{where}: error[{code}]: "), lines[0]
    return lines[0]


# (variable, value, the kind of problem the message must name)
BAD_VALUES = [
    ("LLM_PROXY_BASE_URL", "http://[::1/v1", "not a well-formed URL"),
    ("LLM_PROXY_BASE_URL", f"http://[{CANARY}/v1", "not a well-formed URL"),
    ("LLM_PROXY_BASE_URL", "http://gw.example:99999/v1", "outside 1-65535"),
    ("LLM_PROXY_BASE_URL", f"http://gw.example:{CANARY}/v1", "not a well-formed URL"),
    ("LLM_PROXY_BASE_URL", "http://gw.example:0/v1", "zero port"),
    ("LLM_PROXY_BASE_URL", "http://gw.example/v1\nX-Injected: 1", "contains a line break"),
    ("LLM_PROXY_BASE_URL", "http://gw example/v1", "contains a space"),
    ("LLM_PROXY_BASE_URL", "http://gw.example/v1\r\n", "ends with a line break (CR or LF)"),
    ("LLM_PROXY_BASE_URL", "http://gw.example/v1\r", "ends with a line break (CR or LF)"),
    ("LLM_PROXY_BASE_URL", "http://gw.example/v\t1", "control character"),
    ("LLM_PROXY_BASE_URL", f"ftp://u:{CANARY}@gw.example", "scheme other than http or https"),
    ("LLM_PROXY_BASE_URL", "file:///etc/passwd", "scheme other than http or https"),
    ("LLM_PROXY_BASE_URL", "gw.example/v1", "has no scheme"),
    ("LLM_PROXY_BASE_URL", f"https://u:{CANARY}@gw.example/v1", "must not carry credentials"),
    ("LLM_PROXY_BASE_URL", f"https://gw.example/v1?api_key={CANARY}", "must not carry a query"),
    ("LLM_PROXY_BASE_URL", CANARY, "has no scheme"),
    ("LLM_PROXY_API_KEY", f"{CANARY}\nX-Injected: 1", "contains a line break"),
    ("LLM_PROXY_API_KEY", f"Bearer {CANARY}", "contains a space"),
    ("LLM_PROXY_HEADERS", "{" + '"X-A": ' + "9" * 5001 + "}", "JSON number of 5001 characters"),
    ("LLM_PROXY_HEADERS", "[" * 5000 + "]" * 5000, "nested more than 64 levels"),
    ("LLM_PROXY_HEADERS", '{"X-A": ' + '{"a":' * 1500 + "1" + "}" * 1500 + "}", "nested more than 64 levels"),
    ("LLM_PROXY_HEADERS", f'{{"X-Team": "{CANARY}", "x-team": "{CANARY}"}}', "names the same header as entry 1"),
    ("LLM_PROXY_HEADERS", f'{{"X-Team": "{CANARY}\\r\\nX-Injected: 1"}}', "contains a line break"),
    ("LLM_PROXY_HEADERS", f'{{"X-Team": "{CANARY}\\u0000"}}', "control character"),
    ("LLM_PROXY_HEADERS", f'{{"Authorization: Bearer {CANARY}": "x"}}', "not an HTTP header name"),
    ("LLM_PROXY_HEADERS", f'{{"{CANARY}\\u0001": "x"}}', "not an HTTP header name"),
    ("LLM_PROXY_HEADERS", f'{{"X-Order": "${{secret:{CANARY}}}"}}', "malformed secret reference"),
    ("LLM_PROXY_HEADERS", '{"X-Order": "${secret:sk_canary_' + TAIL + '}"}', "does not resolve"),
    ("LLM_PROXY_HEADERS", f"{CANARY}", "not valid JSON"),
    ("LLM_PROXY_REQUEST_ID_HEADER", f"Bearer {CANARY}", "must be an HTTP header name"),
    ("LLM_PROXY_PROVIDERS", f"openai,Bearer {CANARY}", "entry 2 is not a provider name"),
    ("LLM_PROXY_PROVIDERS", f"{CANARY},,openai", "empty entry"),
    ("LLM_PROXY_PREFERRED_ROUTE", f"openrouter/,Bearer {CANARY}", "entry 2 is not a route namespace"),
    ("LLM_PROXY_PREFERRED_ROUTE", f"{CANARY},", "empty entry"),
    ("LLM_PROXY_TRUST_NAMESPACE_WILDCARDS", CANARY, "must be true or false"),
]


def env_with(name: str, value: str) -> dict[str, str]:
    return {"LLM_PROXY_BASE_URL": UNUSED, name: value} if name != "LLM_PROXY_BASE_URL" else {name: value}


@pytest.mark.parametrize(("name", "value", "problem"), BAD_VALUES)
def test_gateway_check_names_the_variable_never_the_value(tmp_path: Path, name: str, value: str, problem: str) -> None:
    result = check(tmp_path, env_with(name, value))
    assert result.exit_code == 2, result.output
    line = the_error(result, "capplan gateway check", "GATEWAY")
    assert name in line and problem in line


@pytest.mark.parametrize(("name", "value", "problem"), BAD_VALUES[::4])
@pytest.mark.parametrize("command", ["preview", "send"])
def test_preview_and_send_refuse_before_sending(tmp_path: Path, command: str, name: str, value: str, problem: str) -> None:
    result = run(tmp_path, env_with(name, value), command, "--plan", str(GATEWAY_PLAN), str(request_file(tmp_path)))
    assert result.exit_code == 2, result.output
    line = the_error(result, "capplan", "GATEWAY")
    assert name in line and problem in line


def test_a_good_configuration_passes_and_nothing_is_quoted(tmp_path: Path) -> None:
    env = {"LLM_PROXY_BASE_URL": "http://[::1]:9/v1/", "LLM_PROXY_API_KEY": CANARY,
           "LLM_PROXY_HEADERS": json.dumps({"X-Team-Token": CANARY + "-team", "X-Order": "${secret:ORDER_SECRET}",
                                            "X-Cost-Centre": 42}),
           "ORDER_SECRET": CANARY + "-order", "LLM_PROXY_PROVIDERS": "openai,openrouter",
           "LLM_PROXY_PREFERRED_ROUTE": "openai/"}
    result = run(tmp_path, env, "preview", "--plan", str(GATEWAY_PLAN), str(request_file(tmp_path)))
    assert result.exit_code == 0, result.output
    kwargs = json.loads(result.stdout)
    assert kwargs["api_base"] == "http://[::1]:9/v1"
    assert kwargs["extra_headers"]["X-Cost-Centre"] == "42"


def test_a_dotenv_that_is_not_utf8_is_located(tmp_path: Path) -> None:
    (tmp_path / ".env").write_bytes(b"LLM_PROXY_BASE_URL=http://127.0.0.1:9\nLLM_PROXY_API_KEY=\xff\xfe" + TAIL.encode() + b"\n")
    result = check(tmp_path, {})
    assert result.exit_code == 2
    line = the_error(result, ".env:2:19", "GATEWAY")
    assert "not UTF-8" in line
    result = run(tmp_path, {}, "preview", "--plan", str(GATEWAY_PLAN), str(request_file(tmp_path)))
    assert result.exit_code == 2 and ".env:2:19: error[GATEWAY]: the file is not UTF-8" in result.output


def test_a_dotenv_value_with_a_nul_is_refused(tmp_path: Path) -> None:
    # an environment variable cannot hold a NUL; a .env line can
    (tmp_path / ".env").write_bytes(b"LLM_PROXY_BASE_URL=http://gw\x00" + TAIL.encode() + b"/v1\n")
    result = check(tmp_path, {})
    assert result.exit_code == 2
    assert "LLM_PROXY_BASE_URL contains a line break, NUL" in the_error(result, "capplan gateway check", "GATEWAY")


def test_a_dotenv_that_is_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / ".env")
    result = check(tmp_path, {})
    assert result.exit_code == 2
    assert "not a regular file" in the_error(result, ".env", "GATEWAY")


def test_a_dotenv_folder_is_not_settings(tmp_path: Path) -> None:
    (tmp_path / ".env").mkdir()  # a virtualenv named .env
    result = check(tmp_path, {})
    assert result.exit_code == 2 and "LLM_PROXY_BASE_URL is not set" in result.output


# --- rotation keys and key files -------------------------------------------------------------


def preview_rotating(tmp_path: Path, env: dict[str, str]) -> Result:
    return run(tmp_path, env, "preview", "--plan", str(ROTATING_PLAN), str(request_file(tmp_path)))


@pytest.mark.parametrize("keys", [f"k-one,{CANARY}\x01", f"{CANARY} second", f"k-one,{CANARY}\x1b[2J"])
def test_a_rotation_key_with_a_control_character_or_space_is_refused(tmp_path: Path, keys: str) -> None:
    result = preview_rotating(tmp_path, {"OPENROUTER_API_KEYS": keys})
    assert result.exit_code == 2, result.output
    assert "error[CREDENTIAL]" in result.output and "OPENROUTER_API_KEYS entry" in result.output


def test_a_rotation_variable_of_only_commas_is_an_error_with_a_hint(tmp_path: Path) -> None:
    result = preview_rotating(tmp_path, {"OPENROUTER_API_KEYS": ",,,", "OPENROUTER_API_KEY": CANARY})
    assert result.exit_code == 2, result.output
    assert "error[CREDENTIAL]: OPENROUTER_API_KEYS is set but lists no key (only commas and spaces)" in result.output
    assert "hint: list the keys separated by commas (k1,k2), or unset it to use OPENROUTER_API_KEY" in result.output


@pytest.mark.parametrize(("content", "problem"), [
    (f"k-one\n{CANARY} {CANARY}\n".encode(), "line 2 holds a key with a space"),
    (f"k-one\n{CANARY}\x07\n".encode(), "line 2 holds a key with a line break or control character"),
    (b"\xff\xfe" + TAIL.encode(), "not UTF-8 text"),
    (b"# only a comment\n\n", "holds no key"),
])
def test_a_bad_key_file_is_refused(tmp_path: Path, content: bytes, problem: str) -> None:
    keys = tmp_path / "keys.txt"
    keys.write_bytes(content)
    result = preview_rotating(tmp_path, {"OPENROUTER_KEY_FILE": str(keys)})
    assert result.exit_code == 2, result.output
    assert "error[CREDENTIAL]" in result.output and "OPENROUTER_KEY_FILE names a file that" in result.output.replace(
        "file whose", "file that")
    assert problem in result.output


def test_a_key_file_over_the_size_cap_is_refused_unread(tmp_path: Path) -> None:
    keys = tmp_path / "keys.txt"
    with open(keys, "wb") as handle:
        handle.truncate(MAX_KEY_FILE_BYTES + 1)
    result = preview_rotating(tmp_path, {"OPENROUTER_KEY_FILE": str(keys)})
    assert result.exit_code == 2 and f"the limit is {MAX_KEY_FILE_BYTES}" in result.output


def test_a_key_file_path_that_is_a_pasted_key_is_not_quoted(tmp_path: Path) -> None:
    result = preview_rotating(tmp_path, {"OPENROUTER_KEY_FILE": CANARY})
    assert result.exit_code == 2 and "OPENROUTER_KEY_FILE names a file that cannot be read" in result.output


def test_a_key_file_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "keys").mkdir()
    result = preview_rotating(tmp_path, {"OPENROUTER_KEY_FILE": str(tmp_path / "keys")})
    assert result.exit_code == 2 and "is not a regular file" in result.output


def test_a_good_key_file_is_read(tmp_path: Path) -> None:
    keys = tmp_path / "keys.txt"
    keys.write_text(f"# team keys\n{CANARY}-1, note\n{CANARY}-2\n")
    result = preview_rotating(tmp_path, {"OPENROUTER_KEY_FILE": str(keys)})
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["model"]


@pytest.mark.parametrize("special", ["fifo", "/dev/zero", "/dev/urandom"])
def test_a_key_file_that_is_a_device_or_fifo_is_refused_without_hanging(tmp_path: Path, special: str) -> None:
    """In a subprocess with a clean environment: a hang or an unbounded read is a timeout here."""
    path = tmp_path / "keys.fifo" if special == "fifo" else Path(special)
    if special == "fifo":
        os.mkfifo(path)
    request = request_file(tmp_path)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "OPENROUTER_KEY_FILE": str(path)}
    proc = subprocess.run(
        [sys.executable, "-m", "capplan.cli", "preview", "--plan", str(ROTATING_PLAN), str(request)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 2, output
    assert "Traceback" not in output and "MemoryError" not in output
    assert "OPENROUTER_KEY_FILE names a file that is not a regular file" in output
