"""Dual control for any task: the simulated user's own tools, environment component and tool loop.

A small task gives its user a phone (a component the agent cannot reach) that shares the shop's
line with the agent's component (``peers``). One loopback server plays the agent and the user;
what it received is the wire the assertions read: the user's requests carry the user's tools
and its own earlier calls, the agent's never do; the trajectory records the user's calls apart
(``user_tool_calls``, requestor ``user``, the message they preceded) and the user's own state.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli_runner import invoke
from tests.fake_provider import FakeProvider, agent_completion, on_body, tool_call
from tests.trials.helpers import openai_plan

ENV = '''
class Shop:
    def __init__(self):
        self.line_active = False

    def activate_line(self) -> str:
        """Turn the customer's line on."""
        self.line_active = True
        return "line activated"


class Phone:
    def __init__(self, shop, model="p1"):
        self._shop = shop
        self.model = model
        self.restarts = 0

    def check_signal(self) -> str:
        """What the status bar shows."""
        return "5G" if self._shop.line_active else "No Service"

    def restart(self) -> str:
        """Restart the phone."""
        self.restarts += 1
        return "restarted"
'''

TASK = """id: phone_fix
system_prompt: You run a phone shop.
environment:
- {ref: env.py:Shop, name: shop}
tools:
- {name: activate_line, description: Turn the line on., parameters: {type: object, properties: {}}}
user:
  mode: llm
  backstory: Your phone shows No Service.
  tools:
  - {name: check_signal, description: What the status bar shows., parameters: {type: object, properties: {}}}
  - {name: restart, description: Restart the phone., parameters: {type: object, properties: {}}}
  environment:
  - {ref: env.py:Phone, name: phone, peers: {shop: shop}, args: {model: p2}}
"""


def respond(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """The agent activates the line and asks; the user checks its phone before each of its turns."""
    messages = body.get("messages") or []
    names = {t["function"]["name"] for t in body.get("tools") or []}
    if "check_signal" in names:  # the user simulator
        results = [m for m in messages if m.get("role") == "tool"]
        own = [m for m in messages if m.get("role") == "assistant"]
        if not own or own[-1].get("tool_calls") is None:
            return 200, agent_completion(None, [tool_call(f"u{len(results)}", "check_signal", "{}")])
        seen = results[-1]["content"]
        if seen == "5G":
            return 200, agent_completion("It shows 5G now, thanks. ###STOP###")
        return 200, agent_completion(f"My phone says {seen}.")
    if not any(m.get("role") == "tool" for m in messages):
        return 200, agent_completion(None, [tool_call("a0", "activate_line", "{}")])
    return 200, agent_completion("Your line is on; please check again.")


def looping_user(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """A user that never stops calling its tools."""
    if any(t["function"]["name"] == "restart" for t in body.get("tools") or []):
        n = sum(1 for m in body.get("messages") or [] if m.get("role") == "tool")
        return 200, agent_completion(None, [tool_call(f"r{n}", "restart", "{}")])
    return 200, agent_completion("hello")


def play(root: Path, responder: Any, task: str = TASK) -> tuple[Any, dict[str, Any], list[dict[str, Any]]]:
    (root / "env.py").write_text(ENV)
    (root / "task.yaml").write_text(task)
    plan = root / "plan.json"
    plan.write_bytes(openai_plan(key="dual").to_bytes())
    with FakeProvider(on_body(responder)) as server:
        result = invoke("trial", "run", str(root / "task.yaml"), "--plan", str(plan), "--user-plan", str(plan),
                        "--out", str(root / "run"), "--api-base", server.base, "--user-api-base", server.base)
        bodies = [r.body for r in server.requests]
    [line] = [json.loads(text) for text in (root / "run" / "runs.jsonl").read_text().splitlines()]
    trajectory = yaml.safe_load((root / "run" / line["dir"] / "trajectory.yaml").read_text())
    return result, trajectory, bodies


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, dict[str, Any], list[dict[str, Any]]]]:
    mp = pytest.MonkeyPatch()
    mp.setenv("OPENAI_API_KEY", "sk-dual-control-0123456789")
    mp.delenv("LLM_PROXY_BASE_URL", raising=False)
    yield play(tmp_path_factory.mktemp("dual"), respond)
    mp.undo()


def test_the_user_calls_its_own_tools_recorded_apart_from_the_agents(played: Any) -> None:
    result, trajectory, _ = played
    assert result.exit_code == 0, result.output
    assert trajectory["termination"]["reason"] == "user_stop"
    assert [c["name"] for c in trajectory["tool_calls"]] == ["activate_line"]
    assert all(c.get("requestor") is None for c in trajectory["tool_calls"])
    user_calls = trajectory["user_tool_calls"]
    assert [(c["name"], c["output"], c["requestor"]) for c in user_calls] == \
        [("check_signal", "No Service", "user"), ("check_signal", "5G", "user")]
    # each call is placed before the user turn it informed: the opening (0), and the stop turn
    messages = trajectory["messages"]
    assert [messages[c["before_message"]]["content"] for c in user_calls] == \
        ["My phone says No Service.", "It shows 5G now, thanks. ###STOP###"]
    # the phone saw the shop's line through its peer; its state is the user's, recorded apart
    assert trajectory["final_user_state"] == {"phone": {"model": "p2", "restarts": 0}}
    assert trajectory["final_state"] == {"shop": {"line_active": True}}
    assert [t["function"]["name"] for t in trajectory["user_tools"]] == ["check_signal", "restart"]


def test_the_agent_never_sees_the_users_tools_and_the_user_keeps_its_own_history(played: Any) -> None:
    _, _, bodies = played
    agent = [b for b in bodies if {t["function"]["name"] for t in b.get("tools") or []} == {"activate_line"}]
    user = [b for b in bodies if b not in agent]
    assert agent and user
    for body in agent:
        assert not any(m.get("tool_calls") and m["tool_calls"][0]["function"]["name"] == "check_signal"
                       for m in body["messages"])
        # only the user read its phone: the agent reads what the user said, never a result of the phone's
        assert not any(m.get("role") == "tool" and m.get("content") in ("No Service", "5G") for m in body["messages"])
    # the user's last request replays its first call and result before its first words
    last = user[-1]["messages"]
    calls = [m for m in last if m.get("role") == "assistant" and m.get("tool_calls")]
    results = [m["content"] for m in last if m.get("role") == "tool"]
    assert len(calls) == 2 and results == ["No Service", "5G"]
    first_words = next(i for i, m in enumerate(last) if m.get("content") == "My phone says No Service.")
    assert last.index(calls[0]) < first_words < last.index(calls[1])


def test_a_user_that_keeps_calling_its_tools_ends_the_trial_as_a_harness_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-dual-control-0123456789")
    monkeypatch.delenv("LLM_PROXY_BASE_URL", raising=False)
    _, trajectory, _ = play(tmp_path, looping_user, TASK + "  max_tool_steps: 3\n")
    termination = trajectory["termination"]
    assert (termination["reason"], termination["status"]) == ("error", "error")
    assert "user.max_tool_steps" in termination["detail"] and "more than 3" in termination["detail"]
    assert [c["name"] for c in trajectory["user_tool_calls"]] == ["restart"] * 3
    assert trajectory["final_user_state"] == {"phone": {"model": "p2", "restarts": 3}}


def test_a_peer_the_agent_does_not_have_is_a_located_error_and_nothing_is_written(tmp_path: Path) -> None:
    (tmp_path / "env.py").write_text(ENV)
    task = tmp_path / "task.yaml"
    task.write_text(TASK.replace("peers: {shop: shop}", "peers: {shop: shopp}").replace("check_signal, desc",
                                                                                       "check_sgnal, desc"))
    plan = tmp_path / "plan.json"
    plan.write_bytes(openai_plan(key="dual").to_bytes())
    result = invoke("trial", "run", str(task), "--plan", str(plan), "--user-plan", str(plan),
                    "--out", str(tmp_path / "run"))
    assert result.exit_code == 2, result.output
    assert "error[environment-peers]" in result.output and "'shopp'" in result.output and "shop" in result.output
    assert "error[unknown-tool]" in result.output and "no user component has a method 'check_sgnal'" in result.output
    assert f"{task}:" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "run").exists()
