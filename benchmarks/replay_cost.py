"""Replay cost of one route's full matrix, before and after evidence-driven plans.

For one self-hosted route (provider key ``llamacpp``) and one model per verdict the bundled
presets cite (Seed-OSS: consumes-all-turns, Qwen3: in-loop-only, DeepSeek-R1-Distill:
accepted-ignored), the same trial runs twice through capplan's real trial runner and real litellm:

* **before**: the plan replays reasoning on every assistant turn that carries it (what a codec
  with no evidence does: ``replay: all_turns``);
* **after**: the plan compiled with the overlay snippet ``capplan replay report --overlay`` writes
  for those verdicts, so each model's scope follows its measurement.

The trial is three user turns of two tool calls and an answer each (9 agent requests), every
completion returning ~400 tokens of ``reasoning_content``. The figure is the reasoning replayed
per trial turn (agent request): the replayed ``reasoning_content`` of every assistant message in
each request body the server received, in tokens. Against ``--peer`` (the real-peer cache,
tools/realpeer/build_llama_server.sh) tokens are counted by that llama-server's own ``/tokenize``
with the model's tokenizer; otherwise as characters / 4, the replay eval's estimate. Targets: the
accepted-ignored route replays 0 after; the in-loop-only route only the current tool loop's traces
(one per step so far: at most the loop's two).

Run from the project root:  python benchmarks/replay_cost.py [--peer]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import textwrap
import threading
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LLAMACPP_KEY", "sk-local-0000")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from capplan.compiler.compile import compile_paths  # noqa: E402
from capplan.trials.runner import RunContext, run_trial  # noqa: E402
from capplan.trials.spec import TrialSpec  # noqa: E402

#: model name on the route -> the verdict its overlay entry records
MODELS = {"seed-oss-36b": "consumes-all-turns", "qwen3-8b": "in-loop-only",
          "deepseek-r1-distill-qwen-32b": "accepted-ignored"}
CELLS = {"consumes-all-turns": ("consumed +412", "consumed +412"),
         "in-loop-only": ("consumed +412", "ignored +0"),
         "accepted-ignored": ("ignored +0", "ignored +0")}
TRACE = ("Weighing the counter: the user wants one more, the add tool takes an amount, so I call it "
         "with one and then read the value back before answering. ") * 11  # ~1 600 chars
CALLS_PER_TURN = 2

ENV = '''
class Counter:
    """A counter the agent adds to."""

    def __init__(self) -> None:
        self.value = 0

    def add(self, amount: int) -> dict:
        self.value += amount
        return {"value": self.value}
'''

TASK = """\
id: replay_cost
system_prompt: You keep a counter.
environment: counter_env:Counter
tools:
  - name: add
    description: Add to the counter.
    parameters: {type: object, properties: {amount: {type: integer}}, required: [amount]}
user:
  mode: scripted
  turns: ["add one", "add one more", "and once more"]
"""


class Agent:
    """A loopback OpenAI-compatible agent: two tool calls per user turn, then an answer, each with reasoning."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        agent = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                agent.bodies.append(body)
                payload = json.dumps(agent.answer(body)).encode("utf-8")
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
        calls = sum(1 for m in messages[last_user:] if m["role"] == "tool")
        n = len(self.bodies)
        message: dict[str, Any] = {"role": "assistant", "reasoning_content": f"[{n}] {TRACE}"}
        if calls < CALLS_PER_TURN:
            message["content"] = None
            message["tool_calls"] = [{"id": f"call_{n}", "type": "function",
                                      "function": {"name": "add", "arguments": '{"amount": 1}'}}]
        else:
            message["content"] = "Done."
        return {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 1, "model": body["model"],
                "choices": [{"index": 0, "message": message,
                             "finish_reason": "tool_calls" if "tool_calls" in message else "stop"}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 400, "total_tokens": 500}}

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


def overlay(endpoint: str, scope: str | None) -> str:
    """Binding + presets replaying every turn; with ``scope='evidence'`` the measured verdicts too."""
    text = textwrap.dedent(f"""\
        bindings:
          llamacpp: {{endpoint: "{endpoint}", api_key_env: LLAMACPP_KEY, custom_llm_provider: openai,
                      kwargs_pin_transport: true}}
        presets:
          every_turn:
            match: [{", ".join(json.dumps(m) for m in MODELS)}]
            reasoning_codec: {{name: reasoning_content, params: {{replay: all_turns}}}}
        """)
    if scope != "evidence":
        return text
    lines = ["reasoning_replay:", "  llamacpp:"]
    for model, verdict in MODELS.items():
        in_loop, cross = CELLS[verdict]
        lines += [f"    {model}:", "      direct:", f"        verdict: {verdict}", '        measured: "2026-12-01"',
                  "        complete: true",
                  f'        carriers: {{reasoning_content: {{in_loop: "{in_loop}", cross_turn: "{cross}"}}}}',
                  f'        evidence: "benchmark fixture: {verdict}, reasoning_content deltas vs T=412"']
    return text + "\n".join(lines) + "\n"


def replayed(bodies: list[dict[str, Any]], count: Callable[[str], int]) -> list[int]:
    """Tokens of reasoning_content replayed in each request body."""
    return [sum(count(m["reasoning_content"]) for m in b["messages"]
                if m.get("role") == "assistant" and m.get("reasoning_content")) for b in bodies]


def trial(folder: Path, agent: Agent, plan_json: str, key: str, fingerprint: str) -> None:
    task = folder / "pack" / "replay_cost.yaml"
    spec = TrialSpec(plan_json=plan_json, plan_fingerprint=fingerprint, plan_key=key, task_path=str(task),
                     task_text=task.read_text(), task_id="replay_cost", task_pack="pack", index=0,
                     api_base=agent.base, user_api_base=agent.base)
    records = run_trial(spec, RunContext(sleep=lambda _s: None))
    if records.termination_reason.value != "user_stop":
        raise SystemExit(f"trial for {key} ended {records.termination_reason.value}: "
                         f"{records.trajectory['termination']['detail']}")


def peer_tokens(texts: list[str]) -> dict[str, int]:
    """Token counts by a real llama-server's /tokenize (the Qwen3 template model's tokenizer)."""
    from tests.realpeer.peer import LlamaServer, missing_reason

    reason = missing_reason()
    if reason is not None:
        raise SystemExit(f"--peer: {reason}")
    counts: dict[str, int] = {}
    with LlamaServer("qwen3") as server:
        for text in set(texts):
            request = urllib.request.Request(f"http://127.0.0.1:{server.port}/tokenize",
                                             data=json.dumps({"content": text}).encode(),
                                             headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=30) as reply:
                counts[text] = len(json.loads(reply.read())["tokens"])
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer", action="store_true", help="count tokens with the real-peer llama-server")
    args = parser.parse_args()
    agent = Agent()
    bodies: dict[str, dict[str, list[dict[str, Any]]]] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            (folder / "pack").mkdir()
            (folder / "pack" / "counter_env.py").write_text(textwrap.dedent(ENV))
            (folder / "pack" / "replay_cost.yaml").write_text(TASK)
            run = folder / "run.yaml"
            run.write_text("models:\n" + "".join(f"  {m}: {{provider: llamacpp, name: {m}}}\n" for m in MODELS))
            for phase in ("before", "after"):
                ov = folder / f"{phase}.yaml"
                ov.write_text(overlay(agent.base, "evidence" if phase == "after" else None))
                plans = compile_paths(run_config=run, overlays=[ov]).plans
                for model in MODELS:
                    plan = plans[model]
                    start = len(agent.bodies)
                    trial(folder, agent, plan.to_bytes().decode("utf-8"), model, plan.fingerprint)
                    bodies.setdefault(model, {})[phase] = agent.bodies[start:]
    finally:
        agent.close()
    if args.peer:
        texts = [m["reasoning_content"] for by_phase in bodies.values() for got in by_phase.values() for b in got
                 for m in b["messages"] if m.get("reasoning_content")] + [f"[0] {TRACE}"]
        known = peer_tokens(texts)

        def count(text: str) -> int:
            return known[text]
        unit = "tokens (the real-peer llama-server's /tokenize)"
    else:
        def count(text: str) -> int:
            return round(len(text) / 4)
        unit = "tokens (chars/4, the replay eval's estimate)"
    results = {model: {phase: replayed(got, count) for phase, got in by_phase.items()}
               for model, by_phase in bodies.items()}
    trace = count(f"[0] {TRACE}")
    print(f"reasoning replayed per trial turn, in {unit}; one completion's trace = {trace}")
    print(f"{'model':<30} {'verdict':<20} {'before':>8} {'after':>8}  per-request after")
    for model, verdict in MODELS.items():
        before, after = results[model]["before"], results[model]["after"]
        print(f"{model:<30} {verdict:<20} {sum(before) / len(before):>8.1f} {sum(after) / len(after):>8.1f}  {after}")
    never = results["deepseek-r1-distill-qwen-32b"]["after"]
    in_loop = results["qwen3-8b"]["after"]
    ok_never = all(n == 0 for n in never)
    # the whole current loop: 0 on a new user turn, then one trace per step of the loop so far
    ok_loop = all(any(abs(n - steps * trace) <= 2 * max(steps, 1) for steps in range(3)) for n in in_loop) \
        and max(in_loop) > trace
    print(f"accepted-ignored replays 0 after: {'yes' if ok_never else 'NO'}; "
          f"in-loop-only replays only the current loop's traces: {'yes' if ok_loop else 'NO'}")


if __name__ == "__main__":
    main()
