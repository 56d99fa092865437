"""Without litellm (the core install), a real provider call is refused with one line naming the run extra.

The wheel test (test_wheel_install.py) checks the same in a real venv without litellm; these run
in the suite's own environment, where litellm is hidden from the import system.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

from capplan.executor import run_extra
from tests.cli_runner import invoke

REPO = Path(__file__).resolve().parents[2]
PLANS = REPO / "golden" / "plans"
REQUEST = REPO / "golden" / "conversations" / "dict_map_tools.json"
LINE = "needs the run extra: pip install 'capplan[run]'"


@pytest.fixture
def no_litellm(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> Any:
        return None if name == "litellm" else real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    monkeypatch.setattr(run_extra, "_found", False)
    for name in [m for m in sys.modules if m == "litellm" or m.startswith("litellm.")]:
        monkeypatch.delitem(sys.modules, name)
    # an import statement does not ask importlib.util.find_spec: without this finder an earlier
    # test's state could import litellm again and the command would not see it missing
    monkeypatch.setattr(sys, "meta_path", [_NoLitellm(), *sys.meta_path])


class _NoLitellm(importlib.abc.MetaPathFinder):
    """Refuses to import litellm, as an environment without the run extra does."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "litellm" or name.startswith("litellm."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


def test_send_on_a_real_plan_names_the_extra(no_litellm: None) -> None:
    # a native route (Anthropic's) is sent by litellm only
    result = invoke("send", "--plan", str(PLANS / "claude-opus-4.7.json"), str(REQUEST))
    assert result.exit_code == 2, result.output
    assert f"capplan send {LINE}" in result.output
    assert "Traceback" not in result.output


def test_a_trial_on_a_real_plan_is_refused_before_it_starts(no_litellm: None, tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = invoke("trial", "run", str(REPO / "examples" / "trials" / "inventory_desk"),
                    "--plan", str(PLANS / "claude-opus-4.7.json"),
                    "--user-plan", str(PLANS / "claude-opus-4.7.json"),
                    "--out", str(out))
    assert result.exit_code == 2, result.output
    assert f"capplan trial run {LINE}" in result.output
    assert not (out / "runs.jsonl").exists()


def test_mock_plans_need_no_litellm(no_litellm: None, tmp_path: Path) -> None:
    mock = str(PLANS / "mock-echo.json")
    sent = invoke("send", "--plan", mock, str(REQUEST))
    assert sent.exit_code == 0, sent.output
    ran = invoke("trial", "run", str(REPO / "examples" / "trials" / "inventory_desk"),
                 "--plan", mock, "--user-plan", mock, "--out", str(tmp_path / "run"))
    assert ran.exit_code == 0, ran.output
    assert "litellm" not in sys.modules


def test_an_openai_compatible_route_is_sent_directly_without_litellm(no_litellm: None,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.fake_provider import FakeProvider, unscripted

    monkeypatch.setenv("OPENAI_API_KEY", "sk-direct-no-litellm")
    with FakeProvider(unscripted) as server:
        server.queue({"id": "c", "object": "chat.completion", "created": 1, "model": "gpt-4o",
                      "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "hi"}}],
                      "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}})
        result = invoke("send", "--plan", str(PLANS / "gpt-4o.json"), "--api-base",
                        server.base, str(REQUEST))
        assert result.exit_code == 0, result.output
        assert server.last().path == "/v1/chat/completions"
    assert "hi" in result.output
    assert "litellm" not in sys.modules
