"""``capplan probe`` against a real llama.cpp ``llama-server``: what it takes, and how it shows it.

A team's plan for a local Qwen3 (provider ``llamacpp``, an overlay binding speaking the OpenAI
chat protocol, the bundled ``qwen3`` preset) is probed with ``--api-base`` at one llama-server
for the module, through a recording tap. What llama.cpp does with the 18 questions, as run:

- it takes every one with a 200: temperature 0, every reasoning effort (this template has no
  effort switch, and the server does not refuse the field), each ``tool_choice`` form (named
  included), ``parallel_tool_calls`` both ways, ``seed``, ``stop``, and each ``response_format``
  kind (``json_schema`` included, though its error for an unknown kind names only ``text`` and
  ``json_object``);
- it does not merely ignore them: ``tool_choice: required`` and both JSON formats become a
  grammar, so even the random weights answer with a call of the one tool and with JSON text.

So the snippet holds no rule, ``probe --check`` of the plan built for it reports no drift, and a
plan that claims a refusal llama.cpp does not make drifts on exactly that claim.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from capplan.compiler.compile import compile_paths
from tests.cli_runner import invoke_checked
from tests.gateway.tap import Passage, Tap
from tests.probes.snippet_view import snippet_rules
from tests.realpeer.peer import LlamaServer

pytestmark = pytest.mark.realpeer

KEY = "qwen3-local"
API_KEY = "sk-local-llama-server-0000"
RUN = f"models:\n  {KEY}:\n    provider: llamacpp\n    name: qwen3\n"
BINDING = """bindings:
  llamacpp:
    endpoint: http://127.0.0.1:8080/v1
    api_key_env: LLAMACPP_API_KEY
    custom_llm_provider: openai
    kwargs_pin_transport: true
"""
#: a claim from elsewhere that llama.cpp does not bear out
CLAIM = """providers:
  llamacpp:
    params:
      param_value_rules:
        temperature:
          0.0:
            action: reject
            evidence: "2026-01-02, copied from another route's notes"
"""
#: the questions of today's families, in the order they are asked (a later family adds its own after them)
QUESTIONS = [
    "max_tokens=16", "temperature=0", "reasoning_effort=minimal", "reasoning_effort=low", "reasoning_effort=medium",
    "reasoning_effort=high", "reasoning_effort=xhigh", "tool_choice=none", "tool_choice=auto", "tool_choice=required",
    "tool_choice=named", "parallel_tool_calls=true", "parallel_tool_calls=false", "seed=1", "stop=END",
    "response_format=text", "response_format=json_object", "response_format=json_schema_strict",
]


@dataclass
class Peer:
    tap: Tap
    plans: Path

    @property
    def base(self) -> str:
        return self.tap.base + "/v1"


@pytest.fixture(scope="module")
def peer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Peer]:
    folder = tmp_path_factory.mktemp("probe_llamacpp")
    (folder / "run.yaml").write_text(RUN, encoding="utf-8")
    (folder / "binding.yaml").write_text(BINDING, encoding="utf-8")
    (folder / "claim.yaml").write_text(CLAIM, encoding="utf-8")
    plans = folder / "plans"
    plans.mkdir()
    for name, overlays in (("built", ["binding.yaml"]), ("claimed", ["binding.yaml", "claim.yaml"])):
        compiled = compile_paths(run_config=folder / "run.yaml", overlays=[folder / o for o in overlays]).plans[KEY]
        (plans / f"{name}.json").write_bytes(compiled.to_bytes())
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LLAMACPP_API_KEY", API_KEY)
        for name in ("LLM_PROXY_BASE_URL", "LLM_PROXY_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"):
            mp.delenv(name, raising=False)
        with LlamaServer("qwen3") as server:
            tap = Tap(server.base.removesuffix("/v1"))
            try:
                yield Peer(tap, plans)
            finally:
                tap.close()


@pytest.fixture
def lane(peer: Peer) -> Peer:
    peer.tap.reset()
    return peer


def message(passage: Passage) -> dict[str, Any]:
    answer = passage.answer
    assert isinstance(answer, dict) and answer.get("choices"), answer
    found: dict[str, Any] = answer["choices"][0]["message"]
    return found


def test_llama_server_takes_every_question_and_grammars_the_ones_it_can(lane: Peer, tmp_path: Path) -> None:
    out = tmp_path / "out"
    invoke_checked("probe", lane.plans / "built.json", "--api-base", lane.base, "--out", out, expect=0)
    record = json.loads((out / f"{KEY}.probe.json").read_text(encoding="utf-8"))
    assert record["route"] == {"protocol": "openai-chat", "endpoint": lane.base + "/chat/completions",
                               "model": "llamacpp/qwen3", "transport": "direct", "gateway_route": None}
    outcomes = {q["id"]: (q["outcome"], q["status"]) for q in record["questions"]}
    assert list(outcomes)[:len(QUESTIONS)] == QUESTIONS
    assert {outcomes[qid] for qid in QUESTIONS} == {("accepted", 200)}
    # on the wire: one request per question, each with the key, and the value asked about as sent
    posts = lane.tap.posts()
    assert len(posts) == record["sent"] == len(outcomes)
    assert {p.headers["authorization"] for p in posts} == {f"Bearer {API_KEY}"}
    by_id = dict(zip(QUESTIONS, posts))
    assert {p.status for p in by_id.values()} == {200}
    assert by_id["temperature=0"].body["temperature"] == 0.0
    assert by_id["reasoning_effort=xhigh"].body["reasoning_effort"] == "xhigh"
    assert by_id["tool_choice=named"].body["tool_choice"] == {"type": "function", "function": {"name": "echo"}}
    assert by_id["response_format=json_schema_strict"].body["response_format"]["json_schema"]["strict"] is True
    # taken, not ignored: llama.cpp turned these into grammars, so random weights still obey them
    required = message(by_id["tool_choice=required"])
    assert [c["function"]["name"] for c in required["tool_calls"]] == ["echo"]
    assert message(by_id["response_format=json_object"])["content"].lstrip().startswith("{")
    assert re.match(r'\s*\{\s*"word"\s*:', message(by_id["response_format=json_schema_strict"])["content"])
    # none of these refused, so no rule about them
    assert not {param for param, _ in snippet_rules(out / f"{KEY}.overlay.yaml")} & {qid.split("=")[0] for qid in QUESTIONS}


def test_check_reports_no_drift_for_the_plan_built_for_it_and_exactly_the_claim_it_does_not_bear_out(
        lane: Peer) -> None:
    agreed = invoke_checked("probe", "--check", lane.plans / "built.json", "--api-base", lane.base, expect=0)
    # every answer measured, none against a claim (stop and response_format carry none: capplan never sends them)
    assert agreed.stdout.splitlines() == ["no drift"]
    drifted = invoke_checked("probe", "--check", lane.plans / "claimed.json", "--api-base", lane.base, expect=1)
    assert drifted.stdout.splitlines() == [f"{KEY}: temperature 0: plan says refused (rule reject, evidence: 2026-01-02, copied from "
                     "another route's notes), route accepts it today", "drift found"]
