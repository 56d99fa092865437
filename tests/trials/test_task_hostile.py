"""Hostile task files: `capplan trial run` answers each with a located error, exit 2, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_runner import invoke

REPO = Path(__file__).resolve().parents[2]
MOCK_PLAN = REPO / "golden" / "plans" / "mock-echo.json"
CANARY = "sk-canary-task-0123456789abcdef0123456789"

ALIAS_BOMB = "\n".join(
    ["a: &a [x, x, x, x, x, x, x, x, x]"]
    + [f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]" for i in range(8)]
) + "\n"

CASES = {
    "alias bomb": (ALIAS_BOMB, "error[alias-expansion]"),
    "deep nesting": ("id: " + "[" * 5000 + "\n", "error[nesting-too-deep]"),
    "wrong type": ("id: 7\nsystem_prompt: [not, a, string]\nenvironment: env:Env\ntools: 3\n", "error[wrong-type]"),
    "truncated": ("id: t\nsystem_prompt: \"unclosed\ntools:\n  - name: a\n", "error[yaml-syntax]"),
    "planted key": (f"id: t\nsystem_prompt: hi\nenvironment: env:Env\napi_key: {CANARY}\ntools: []\n", "error[unknown-key]"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_hostile_task_file_is_refused_located_and_writes_nothing(tmp_path: Path, name: str) -> None:
    text, expected = CASES[name]
    task = tmp_path / "task.yaml"
    task.write_text(text)
    out = tmp_path / "run"
    result = invoke("trial", "run", str(task), "--plan", str(MOCK_PLAN), "--out", str(out))
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    assert f"{task}:" in result.output and expected in result.output
    assert CANARY not in result.output
    assert not out.exists()


def test_a_huge_task_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    task = tmp_path / "task.yaml"
    with task.open("w") as handle:
        handle.write("id: t\nsystem_prompt: |\n")
        line = "  " + "x" * 1022 + "\n"
        for _ in range(2 * 1024 + 16):
            handle.write(line)
    out = tmp_path / "run"
    result = invoke("trial", "run", str(task), "--plan", str(MOCK_PLAN), "--out", str(out))
    assert result.exit_code == 2, result.output
    assert "file-too-large" in result.output and f"{task}" in result.output
    assert not out.exists()


STOP_SIGNAL_CASES = {
    "wrong type": ("[a, b]", "user.llm.stop_signals: Input should be a valid dictionary"),
    "unknown end": ("{'###X###': user_gone}", "user.llm.stop_signals.###X###: Input should be 'user_stop'"),
    "huge signal": ("{'" + "x" * 65 + "': user_stop}", "String should have at most 64 characters"),
    "too many": ("{" + ", ".join(f"S{i}: user_stop" for i in range(17)) + "}",
                 "user.llm.stop_signals: Dictionary should have at most 16 items"),
}


@pytest.mark.parametrize("name", sorted(STOP_SIGNAL_CASES))
def test_a_hostile_user_stop_signals_block_is_refused_located_and_writes_nothing(tmp_path: Path, name: str) -> None:
    value, expected = STOP_SIGNAL_CASES[name]
    task = tmp_path / "task.yaml"
    task.write_text("id: t\nsystem_prompt: hi\nenvironment: env:Env\ntools: []\nuser:\n  mode: llm\n"
                    f"  backstory: b\n  stop_signals: {value}\n")
    out = tmp_path / "run"
    result = invoke("trial", "run", str(task), "--plan", str(MOCK_PLAN), "--out", str(out))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert f"{task}:" in result.output and "error[wrong-type]" in result.output and expected in result.output
    assert not out.exists()


USER_SIDE_CASES = {
    "tools of the wrong type": ("  tools: 3\n", "user.llm.tools: Input should be a valid list"),
    "environment of the wrong type": ("  environment: env:Env\n", "user.llm.environment: must be a list"),
    "huge step bound": ("  max_tool_steps: 1000000000\n", "user.llm.max_tool_steps: Input should be less than or equal "
                                                           "to 100"),
    "step bound as text": ("  max_tool_steps: '5'\n", "user.llm.max_tool_steps: Input should be a valid integer"),
    "too many tools": ("  environment: [{ref: env:Phone}]\n  tools: ["
                       + ", ".join(f"{{name: t{i}, description: d}}" for i in range(257)) + "]\n",
                       "user.llm.tools: List should have at most 256 items"),
    "planted key in a user tool": ("  environment: [{ref: env:Phone}]\n  tools: [{name: t, description: d, "
                                   f"api_key: {CANARY}}}]\n", "error[unknown-key]"),
    "planted key in a user component": (f"  environment: [{{ref: env:Phone, api_key: {CANARY}}}]\n",
                                        "error[unknown-key]"),
    "tools without a component": ("  tools: [{name: t, description: d}]\n", "give user.environment"),
    "peers of the wrong type": ("  environment: [{ref: env:Phone, peers: [shop]}]\n",
                                "peers: Input should be a valid dictionary"),
}


@pytest.mark.parametrize("name", sorted(USER_SIDE_CASES))
def test_a_hostile_user_side_is_refused_located_and_writes_nothing(tmp_path: Path, name: str) -> None:
    block, expected = USER_SIDE_CASES[name]
    task = tmp_path / "task.yaml"
    task.write_text("id: t\nsystem_prompt: hi\nenvironment: env:Env\ntools: []\nuser:\n  mode: llm\n  backstory: b\n"
                    + block)
    out = tmp_path / "run"
    result = invoke("trial", "run", str(task), "--plan", str(MOCK_PLAN), "--out", str(out))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and CANARY not in result.output
    assert f"{task}:" in result.output and expected in result.output, result.output
    assert not out.exists()
