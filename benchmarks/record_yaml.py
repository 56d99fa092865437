"""Record YAML: CPU to write a trial's records, written straight (record_emitter) against PyYAML's nodes.

Three record shapes, each rendered by ``dump_records_yaml`` (plain data: written straight by
``capplan/trials/run_folder/record_emitter.py``) and by ``yaml.dump`` with the record dumper's node
building and libyaml's C emitter (what every record took before, and what a record of other types
still takes), checked to be the same bytes, and timed in one run:

* the trial-loop benchmark's six-turn trial (``trajectory.yaml`` and ``metrics.yaml`` of the
  counter task: short texts, the tool schemas, the calls' figures);
* a mixed trajectory: thirty messages of short and multi-line text, tool calls with JSON arguments,
  tool results;
* a long-text trajectory: fifty messages of about 2 000 characters of multi-line prose (about 115 KB
  of YAML), where both sides spend their time scanning and folding text.

Prints the CPU per document of each side and their ratio (direct / nodes; below 1 is faster).

Run from the project root:  python benchmarks/record_yaml.py [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from capplan.trials.run_folder.record_emitter import emit_records_yaml  # noqa: E402
from capplan.trials.run_folder.record_yaml import RecordDumper, dump_records_yaml  # noqa: E402

_WORDS = ("the of and to in is you that it was for on are as with they at be this have from order refund "
          "flight booking seat change cancel baggage").split()


def _prose(rng: random.Random, size: int, lines: bool) -> str:
    sentences: list[str] = []
    while sum(len(s) for s in sentences) < size:
        sentences.append(" ".join(rng.choice(_WORDS) for _ in range(rng.randrange(3, 25)))
                         + rng.choice([".", ":", "!", "?", " - ok"]))
    return ("\n" if lines else " ").join(sentences)


def counter_trial() -> list[Any]:
    """The two documents of one trial of the trial-loop benchmark's counter task, as its runs write them."""
    tools = [{"type": "function", "function": {"name": name, "description": text, "parameters": {
        "type": "object", "properties": properties, **({"required": list(properties)} if properties else {})}}}
        for name, text, properties in (("add", "Add to the counter.", {"amount": {"type": "integer"}}),
                                       ("note", "Write a note.", {"text": {"type": "string"}}),
                                       ("explode", "Always fails.", {}))]
    messages: list[dict[str, Any]] = []
    calls = []
    for turn, said in enumerate(("add one", "and one more", "thanks, that's all")):
        messages.append({"role": "user", "content": said})
        if turn < 2:
            messages.append({"role": "assistant", "content": None, "tool_calls": [{"id": f"call_{turn}", "type": "function",
                             "function": {"name": "add", "arguments": '{"amount": 1}'}}]})
            messages.append({"role": "tool", "tool_call_id": f"call_{turn}", "content": json.dumps({"value": turn + 1})})
        messages.append({"role": "assistant", "content": f"done after {len(messages) + 1} messages"})
        for step in range(2):
            calls.append({"role": "agent", "turn": turn, "outcome": "accepted", "status": "ok", "error_class": None,
                          "usage": {"prompt_tokens": 120 + 40 * turn, "completion_tokens": 12, "cached_tokens": 0},
                          "cost_usd": 0.00021, "cost_source": "pricing", "latency_s": 0.0081 + step / 1e4,
                          "generation_id": None, "route": "openai/gpt-5", "route_kind": "direct", "key_index": 0})
    trial = {"key": "gpt-5/count/3", "plan_key": "gpt-5", "plan_fingerprint": "6bbd" * 16, "task_id": "count",
             "task_pack": "pack", "task_sha256": "bad2" * 16, "index": 3}
    trajectory = {"format": "capplan-trajectory", "version": 1, "trial": trial, "system_prompt": "You keep a counter.",
                  "tools": tools, "messages": messages}
    metrics = {"format": "capplan-metrics", "version": 1, "trial": trial, "calls": calls,
               "totals": {"calls": len(calls), "cost_usd": 0.00126, "prompt_tokens": 1080, "completion_tokens": 72},
               "grades": [{"grader": "state", "passed": True, "score": 1.0, "detail": "counter is 2"}]}
    return [trajectory, metrics]


def mixed_trajectory(rng: random.Random) -> list[Any]:
    messages: list[dict[str, Any]] = []
    for i in range(30):
        if i % 3 == 0:
            messages.append({"role": "user", "content": _prose(rng, rng.choice([40, 200, 800]), rng.random() < 0.7)})
        elif i % 3 == 1:
            arguments = json.dumps({"order_id": f"#W{rng.randrange(10**6)}", "reason": _prose(rng, 60, False)})
            messages.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": f"call_{i}", "type": "function", "function": {"name": "get_order", "arguments": arguments}}]})
        else:
            result = {"status": "delivered", "items": [{"id": rng.randrange(10**5), "name": _prose(rng, 30, False)}
                                                       for _ in range(4)]}
            messages.append({"role": "tool", "tool_call_id": f"call_{i - 1}", "content": json.dumps(result)})
    return [{"trial": {"key": "m/t/1"}, "messages": messages,
             "usage": {"prompt_tokens": 12345, "completion_tokens": 678, "cost_usd": 0.0123}}]


def long_text_trajectory(rng: random.Random) -> list[Any]:
    return [{"trial": {"key": "m/t/2"}, "messages": [
        {"role": "user" if i % 2 else "assistant", "content": _prose(rng, 2000, True)} for i in range(50)]}]


def _nodes(data: Any) -> bytes:
    text: str = yaml.dump(data, Dumper=RecordDumper, sort_keys=False, allow_unicode=True, width=120)
    return text.encode("utf-8")


def _cpu_per_document(render: Any, documents: list[Any], rounds: int) -> float:
    """Median over ``rounds`` of the CPU seconds one document takes (each round renders every document
    enough times to take about 0.2 s)."""
    start = time.process_time()
    for document in documents:
        render(document)
    once = max(time.process_time() - start, 1e-6)
    repeat = max(1, int(0.2 / once))
    samples = []
    for _ in range(rounds):
        start = time.process_time()
        for _ in range(repeat):
            for document in documents:
                render(document)
        samples.append((time.process_time() - start) / (repeat * len(documents)))
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds per side (the median is printed)")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if not hasattr(yaml, "CSafeDumper"):
        parser.error("PyYAML is built without libyaml here: the node side would not be the one records take")
    rng = random.Random(7)
    shapes = (("the trial-loop benchmark's trial (2 documents)", counter_trial()),
              ("a mixed trajectory", mixed_trajectory(rng)), ("a long-text trajectory", long_text_trajectory(rng)))
    for label, documents in shapes:
        for document in documents:
            if emit_records_yaml(document) is None:
                raise SystemExit(f"{label}: the direct writer declined it; this benchmark measures the direct path")
            if dump_records_yaml(document) != _nodes(document):
                raise SystemExit(f"{label}: the two sides wrote different bytes")
        size = sum(len(_nodes(d)) for d in documents) / len(documents)
        direct = _cpu_per_document(dump_records_yaml, documents, args.rounds)
        nodes = _cpu_per_document(_nodes, documents, args.rounds)
        print(f"{label}, {size / 1024:.1f} KiB a document: written straight {direct * 1e6:.0f} us, "
              f"through PyYAML's nodes {nodes * 1e6:.0f} us; direct / nodes = {direct / nodes:.2f}")


if __name__ == "__main__":
    main()
