"""The trajectory keeps the system prompt the agent's request carried (the prompt policy's hints appended)
beside the task's own, through the real loop and litellm against the loopback agent server."""

from __future__ import annotations

from pathlib import Path

import pytest

from capplan.trials.runner import RunContext, run_trial
from tests.executor.plans import make_plan
from tests.fake_provider import FakeProvider, agent, agent_completion
from tests.trials.helpers import spec_for

ENV = '''
class Tally:
    def __init__(self) -> None:
        self.counts = {}

    def record(self, counts: dict) -> str:
        self.counts.update(counts)
        return "ok"
'''

TASK = """\
id: tally
system_prompt: You keep a tally.
environment: tally_env:Tally
tools:
  - name: record
    description: Record counts per name.
    parameters:
      type: object
      properties:
        counts: {type: object, additionalProperties: true, description: Count per fruit name.}
      required: [counts]
user:
  mode: scripted
  turns: ["count two apples"]
"""


def test_the_trajectory_has_the_prompt_the_request_carried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-effective-prompt-test")
    monkeypatch.delenv("LLM_PROXY_BASE_URL", raising=False)
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "tally_env.py").write_text(ENV)
    task = pack / "tally.yaml"
    task.write_text(TASK)
    plan = make_plan("openai", "agent-model", key="agent", policies={"prompt_policy": "dict_map_hints"})
    with FakeProvider(agent) as server:
        server.queue(agent_completion("Noted."))
        records = run_trial(spec_for(task, plan, api_base=server.base), RunContext())
        [body] = server.bodies()
    trajectory = records.trajectory
    sent = body["messages"][0]
    assert sent["role"] == "system" and trajectory["effective_system_prompt"] == sent["content"]
    assert trajectory["system_prompt"] == "You keep a tally."
    assert trajectory["effective_system_prompt"].startswith("You keep a tally.")
    assert "argument `counts`: always include it" in trajectory["effective_system_prompt"]  # the policy's hint
