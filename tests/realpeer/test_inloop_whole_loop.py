"""``replay: in_loop`` against real in-loop-only chat templates: the whole current tool loop.

Each template model the replay verdicts call ``in-loop-only`` is served by llama-server. A tool loop
of three steps, each with its own reasoning, goes to it three ways: raw with ``reasoning_content``
on every step (what the template reads when it is all there), raw with it on the last step only
(what the old one-step in_loop replay sent), and through capplan with the ``in_loop`` codec. The
template renders the earlier steps' reasoning too (the raw deltas show it), so capplan's prompt must
be exactly the every-step one. Then the replay eval's multi-step position, against the same server,
must call the loop consumed and the row in-loop-only.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from capplan.evals.reasoning_replay.commands.cli import main as harness
from capplan.executor.client import Client
from tests.executor.plans import make_plan
from tests.realpeer.peer import LlamaServer
from tests.realpeer.test_replay_verdicts import EXPECTED
from tests.replay.helpers import matrix

pytestmark = pytest.mark.realpeer

IN_LOOP_ONLY = sorted(model for model, (verdict, _, _) in EXPECTED.items() if verdict == "in-loop-only")

TOOL = {"type": "function", "function": {"name": "get_weather", "description": "Current weather of a city.",
                                         "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                        "required": ["city"]}}}
CITIES = ("Paris", "Lyon", "Nice")


def reasoning(step: int) -> str:
    # distinct per step, so no template could count one step's text for another's
    return (f"Step {step}: the user wants the weather in {CITIES[step]}; I call get_weather with it, "
            f"then compare the sky and the temperature with the previous cities. ") * 3


def loop(carry: set[int], *, capplan: bool) -> list[dict[str, Any]]:
    """user, then three tool-call steps and their results; the steps in ``carry`` carry reasoning."""
    out: list[dict[str, Any]] = [{"role": "user", "content": "What is the weather in Paris, Lyon and Nice?"}]
    for step, city in enumerate(CITIES):
        call = {"id": f"call_{step}", "type": "function",
                "function": {"name": "get_weather", "arguments": f'{{"city": "{city}"}}'}}
        assistant: dict[str, Any] = {"role": "assistant", "content": "", "tool_calls": [call]}
        if step in carry:
            if capplan:
                assistant["reasoning"] = {"blocks": [{"type": "reasoning_text", "text": reasoning(step)}]}
            else:
                assistant["reasoning_content"] = reasoning(step)
        out += [assistant, {"role": "tool", "tool_call_id": f"call_{step}", "content": f"{city}: 18 C, clear."}]
    return out


@pytest.fixture(scope="module", params=IN_LOOP_ONLY)
def server(request: pytest.FixtureRequest) -> Iterator[LlamaServer]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_API_KEY", "sk-local-llama-server-0000")
        mp.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        with LlamaServer(request.param) as srv:
            yield srv


def raw_tokens(server: LlamaServer, messages: list[dict[str, Any]]) -> int:
    body = {"model": server.model, "messages": messages, "tools": [TOOL], "max_tokens": 1, "temperature": 0}
    tokens: int = server.chat(body)["usage"]["prompt_tokens"]
    return tokens


def capplan_tokens(server: LlamaServer, messages: list[dict[str, Any]], replay: str = "in_loop") -> int:
    plan = make_plan("openai", server.model, policies={"reasoning_codec": ("reasoning_content", {"replay": replay})})
    result = Client(plan, api_base=server.base).generate(
        {"messages": messages, "tools": [TOOL], "max_tokens": 1, "temperature": 0})
    return result.usage.prompt_tokens


def test_the_template_reads_every_step_of_the_loop_and_in_loop_replays_them_all(server: LlamaServer) -> None:
    every, last_only, none = (raw_tokens(server, loop(carry, capplan=False)) for carry in ({0, 1, 2}, {2}, set()))
    # the template renders each earlier step's reasoning: the one-step replay sent too little
    assert last_only > none and every > last_only
    assert every - last_only > (last_only - none)  # two earlier steps read, each about a step's worth
    # capplan's in_loop replay: the prompt the template renders is the every-step one, token for token
    assert capplan_tokens(server, loop({0, 1, 2}, capplan=True)) == every
    # and it is what all_turns sends inside one loop
    assert capplan_tokens(server, loop({0, 1, 2}, capplan=True), "all_turns") == every


def test_after_a_new_user_message_the_earlier_loop_is_not_replayed_and_not_read(server: LlamaServer) -> None:
    history = loop({0, 1, 2}, capplan=False) + [{"role": "assistant", "content": "All clear."},
                                                {"role": "user", "content": "Thanks. And tomorrow?"}]
    stripped = [{k: v for k, v in m.items() if k != "reasoning_content"} for m in history]
    read = raw_tokens(server, history)
    assert read == raw_tokens(server, stripped)  # the template drops an earlier turn's reasoning
    ours = loop({0, 1, 2}, capplan=True) + history[-2:]
    assert capplan_tokens(server, ours) == read


def test_the_multi_step_eval_case_calls_the_whole_loop_consumed(server: LlamaServer, tmp_path: Path) -> None:
    out = tmp_path / "out"
    code = harness(["run", "--route", "custom", "--kind", "chat", "--base-url", server.base,
                    "--models", server.model, "--out", str(out), "--workers", "1", "--rps", "0",
                    "--max-tokens", "4", "--retries", "0", "--steps", "text",
                    "--positions", "in_loop,loop_steps", "--variants", "reasoning_content"])
    assert code == 0, f"harness run exited {code}"
    assert harness(["report", "--out", str(out), "--no-heatmap"]) == 0
    (row,) = [r for r in matrix(out) if r["model"] == server.model]
    assert row["verdict"] == "in-loop-only", row
    cells = {c["position"]: c for c in row["cells"] if c["variant"] == "reasoning_content"}
    assert cells["in_loop"]["class"] == "consumed" and cells["loop_steps"]["class"] == "consumed", row["cells"]
    # three traces read, not one: the earlier steps' share is about twice the last step's
    assert cells["loop_steps"]["delta"] >= 2.5 * cells["in_loop"]["delta"], row["cells"]
    assert any("reads every step of the 3-step tool loop" in note for note in row["notes"]), row["notes"]


@pytest.mark.skipif(os.environ.get("CAPPLAN_REALPEER_ALL") is None,
                    reason="set CAPPLAN_REALPEER_ALL=1 to also run the loop case on the other verdicts' templates")
@pytest.mark.parametrize("model", sorted(m for m, (v, _, _) in EXPECTED.items() if v != "in-loop-only"))
def test_the_loop_case_agrees_with_every_other_templates_verdict(model: str, tmp_path: Path) -> None:
    verdict = EXPECTED[model][0]
    with LlamaServer(model) as srv:
        out = tmp_path / "out"
        assert harness(["run", "--route", "custom", "--kind", "chat", "--base-url", srv.base, "--models", model,
                        "--out", str(out), "--workers", "1", "--rps", "0", "--max-tokens", "4", "--retries", "0",
                        "--steps", "text", "--positions", "in_loop,cross_turn,loop_steps",
                        "--variants", "reasoning_content"]) == 0
    assert harness(["report", "--out", str(out), "--no-heatmap"]) == 0
    (row,) = [r for r in matrix(out) if r["model"] == model]
    assert row["verdict"] == verdict, row
    loop_class = next(c["class"] for c in row["cells"] if c["position"] == "loop_steps")
    assert loop_class == ("consumed" if verdict == "consumes-all-turns" else "ignored"), row["cells"]
