"""A trial with ``tool_choice: required`` against llama-server, end to end through capplan.

Real litellm sends every agent request to a real llama-server serving the Qwen3 template; the
server turns ``tool_choice: required`` into a grammar, so even random weights answer each step
with a well-formed call of the one tool. The loop runs the tool, records its output, and the
task's ``max_steps_per_turn`` ends the trial: the outcome a model that never stops calling tools
must get. Asserted on the trial's records.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from capplan.trials.outcome import TerminationReason
from capplan.trials.runner import RunContext, run_trial
from tests.executor.plans import make_plan
from tests.realpeer.peer import LlamaServer
from tests.trials.helpers import spec_for

pytestmark = pytest.mark.realpeer

ENV = '''
class Thermostat:
    """A thermostat whose unit can be switched."""

    def __init__(self) -> None:
        self.unit = "celsius"
        self.switches = 0

    def set_unit(self, unit: str) -> dict:
        self.unit = unit
        self.switches += 1
        return {"unit": self.unit, "switches": self.switches}
'''

TASK = """\
id: thermostat
system_prompt: You control a thermostat. Use the tool.
environment: thermostat_env:Thermostat
tools:
  - name: set_unit
    description: Switch the display unit.
    parameters:
      type: object
      properties: {unit: {type: string, enum: [celsius, fahrenheit]}}
      required: [unit]
tool_choice: required
parallel_tool_calls: false
max_steps_per_turn: 2
user:
  mode: scripted
  turns: ["switch the thermostat to fahrenheit"]
"""


@pytest.fixture(scope="module")
def server() -> Iterator[LlamaServer]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_API_KEY", "sk-local-llama-server-0000")
        mp.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        with LlamaServer("qwen3") as srv:
            yield srv


def test_a_required_tool_choice_trial_runs_end_to_end(server: LlamaServer, tmp_path: Path) -> None:
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "thermostat_env.py").write_text(textwrap.dedent(ENV))
    task = pack / "thermostat.yaml"
    task.write_text(TASK)
    plan = make_plan("openai", "qwen3", key="qwen3-local", policies={"reasoning_codec": "reasoning_content"},
                     request_defaults={"max_tokens": 128, "temperature": 0.0})
    records = run_trial(spec_for(task, plan, api_base=server.base), RunContext(sleep=lambda _s: None))
    assert records.termination_reason is TerminationReason.MAX_STEPS_PER_TURN, records.trajectory["termination"]
    assert "(max_steps_per_turn: 2)" in records.trajectory["termination"]["detail"]
    calls = records.trajectory["tool_calls"]
    # one call per completion (parallel_tool_calls: false); the completion past the limit ends the turn
    assert len(calls) == records.metrics["n_calls"] == 3 and {c["name"] for c in calls} == {"set_unit"}
    # the grammar llama-server built from tool_choice: required admits only the declared enum
    assert all(c["arguments"]["unit"] in ("celsius", "fahrenheit") and c["error"] is None for c in calls)
    assert records.trajectory["final_state"]["switches"] == 3
    assert records.metrics["usage"]["prompt_tokens"] > 0
    sent = [m for m in records.trajectory["messages"] if m["role"] == "assistant"]
    assert all(m["tool_calls"] and not m.get("content") for m in sent)
