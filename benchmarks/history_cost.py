"""History-cost benchmark: CPU per turn at 30 and 1 000 messages, direct transport and litellm path.

A trial turn sends the whole conversation again. What a turn costs should be what its new messages
cost, not the history's length: target 1 000/30 <= 1.5x on the direct transport, <= 2x through
litellm (issue 39).

Measured in one run, in this process: a conversation grows as the trial loop grows it (one
``ChatRequest.extended`` per turn by the four messages a tool turn adds: the assistant's tool call,
the tool's result, the assistant's answer, the next user message), and each turn is sent by
``Client.generate`` to a loopback OpenAI-compatible server in another process answering at once
(``tests.fake_provider``, so its JSON parsing is not on this process's clock). A turn's figure is
the process CPU (every thread) of extending the request and sending it; each size's figure is the
median of the turns whose history is within 8 messages of it, over ``--conversations``
conversations per path. The paths take turns conversation by conversation, so a machine whose
speed drifts slows both alike. litellm's success logging finishes on a thread of its own after a
call returns; ``--settle`` waits for it before the next turn is timed (its CPU is charged to no
turn; use 0 to charge it to the next one).

Run from the project root:  python benchmarks/history_cost.py [--conversations 3] [--sizes 30,1000]
                            [--only direct|litellm] [--profile direct|litellm [--profile-size N]]
                            [--reference-cost [--reference-rounds N]]

``--profile PATH`` prints cProfile's top functions of the turns near ``--profile-size`` (1 000) and
near 30 instead of the table. ``--reference-cost`` runs the workload once per mode and prints what
the reference mode (every speed-only path off) costs against the fast one.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.transport import KEY, REQUEST, Server, compile_plans  # noqa: E402  (sets the loopback env)
from capplan.executor import client as client_module  # noqa: E402
from capplan.executor.client import Client, _litellm_completion  # noqa: E402
from capplan.executor.messages import ChatRequest  # noqa: E402
from capplan.executor.plan import Plan  # noqa: E402

assert KEY  # the key the loopback env carries
WINDOW = 8  # how near a turn's history must be to a size to count for it


def turn_messages(turn: int) -> list[dict[str, Any]]:
    """The four messages one tool turn adds (unique text per turn, as a real conversation has)."""
    call = f"call_{turn}"
    return [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": call, "type": "function", "function": {"name": "add", "arguments": f'{{"amount": {turn}}}'}}]},
        {"role": "tool", "tool_call_id": call, "content": f'{{"value": {turn}, "note": "counter moved by {turn}"}}'},
        {"role": "assistant", "content": f"The counter is now {turn}. Anything else?"},
        {"role": "user", "content": f"add {turn + 1} more, please, and tell me the new value (step {turn})"},
    ]


def conversation(send: Callable[[ChatRequest], Any], sizes: tuple[int, ...],
                 samples: dict[int, list[float]], profiles: dict[int, cProfile.Profile] | None = None,
                 settle_s: float = 0.0, inside: InLitellm | None = None,
                 own: dict[int, list[float]] | None = None) -> None:
    """Grow one conversation past the largest size, timing each turn (extend + send) near a size;
    ``own`` gets the same turns less the time spent inside litellm."""
    request = REQUEST
    turn = 0
    top = max(sizes) + WINDOW
    while len(request.messages) <= top:
        new = turn_messages(turn)
        size = len(request.messages) + len(new)
        near = [s for s in sizes if abs(size - s) <= WINDOW]
        profile = profiles.get(near[0]) if profiles is not None and near else None
        if profile is not None:
            profile.enable()
        if inside is not None:
            inside.spent = 0.0
        started = time.process_time()
        request = request.extended(new)
        send(request)
        elapsed = time.process_time() - started
        if profile is not None:
            profile.disable()
        for wanted in near:
            samples[wanted].append(elapsed)
            if own is not None:
                own[wanted].append(elapsed - (inside.spent if inside is not None else 0.0))
        if settle_s:
            time.sleep(settle_s)
        turn += 1


class InLitellm:
    """Process CPU spent inside ``litellm.completion`` (the client's own completion, timed): what a
    turn through litellm costs beyond capplan's own work. Its logging thread's CPU is not in it."""

    def __init__(self) -> None:
        self.spent = 0.0
        self._completion = _litellm_completion()  # imports litellm before anything is timed

    def factory(self) -> Callable[..., Any]:
        """Stands in for ``capplan.executor.client._litellm_completion``: the same completion, timed."""
        return self.timed

    def timed(self, **kwargs: Any) -> Any:
        started = time.process_time()
        try:
            return self._completion(**kwargs)
        finally:
            self.spent += time.process_time() - started


def senders(base: str, plans: dict[str, Path], inside: InLitellm) -> dict[str, Callable[[ChatRequest], Any]]:
    """The same plan sent on the direct transport and through ``litellm.completion`` (timed by ``inside``)."""
    direct = Client(Plan.load(plans["direct"]), api_base=base)
    assert direct.direct is not None, "the benchmark plan is not on the direct transport"
    via_litellm = Client(Plan.load(plans["litellm"]), api_base=base)
    assert via_litellm.calls_through_litellm, "the litellm plan does not call litellm"
    client_module._litellm_completion = inside.factory  # type: ignore[assignment]
    return {"direct": direct.generate, "litellm": via_litellm.generate}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=3, help="conversations per path (medians over all)")
    parser.add_argument("--sizes", default="30,1000", help="history lengths to report, comma-separated")
    parser.add_argument("--only", choices=("direct", "litellm"))
    parser.add_argument("--settle", type=float, default=0.02,
                        help="seconds to wait after each turn (litellm's logging thread finishes off the clock)")
    parser.add_argument("--profile", choices=("direct", "litellm"), help="print a cProfile of this path's turns")
    parser.add_argument("--profile-size", type=int, default=1000)
    parser.add_argument("--reference-cost", action="store_true",
                        help="run once in the fast and once in the reference mode and print the ratios")
    parser.add_argument("--reference-rounds", type=int, default=1)
    args = parser.parse_args()
    if args.reference_cost:
        from benchmarks.reference_cost import report

        report(__file__, sys.argv[1:])
        return
    sizes = tuple(sorted(int(s) for s in args.sizes.split(",")))
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as tmp, Server(0.0) as server:
        plans = compile_plans(Path(tmp))
        inside = InLitellm()
        sends = senders(server.base, plans, inside)
        if args.only:
            sends = {args.only: sends[args.only]}
        if args.profile:
            wanted = (sizes[0], args.profile_size)
            profiles = {size: cProfile.Profile() for size in wanted}
            conversation(sends[args.profile], wanted, {size: [] for size in wanted}, None, args.settle)  # warm
            conversation(sends[args.profile], wanted, {size: [] for size in wanted}, profiles, args.settle)
            for size, profile in profiles.items():
                out = io.StringIO()
                pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(25)
                print(f"--- {args.profile}, turns near {size} messages ---\n{out.getvalue()}")
            return
        for send in sends.values():  # warm every path: imports, pools, caches
            conversation(send, (sizes[0],), {sizes[0]: []}, None, args.settle)
        samples = {name: {size: [] for size in sizes} for name in sends}
        own = {name: {size: [] for size in sizes} for name in sends}
        for _ in range(args.conversations):
            for name, send in sends.items():
                conversation(send, sizes, samples[name], None, args.settle, inside, own[name])
    print(f"CPU per turn (ms, extend + Client.generate; median of the turns within {WINDOW} messages of each size, "
          f"{args.conversations} conversations):")
    rows = {name: samples[name] for name in samples}
    if "litellm" in own:
        # the target is on capplan's own work; litellm's per-message transformations are its own
        rows = {"direct": samples["direct"]} if "direct" in samples else {}
        rows["litellm, whole turn"] = samples["litellm"]
        rows["litellm, capplan's part"] = own["litellm"]
    targets = {"direct": "target <= 1.5", "litellm, capplan's part": "target <= 2",
               "litellm, whole turn": "litellm's own transformations included"}
    for name, by_size in rows.items():
        medians = {size: statistics.median(values) * 1e3 for size, values in by_size.items()}
        base = medians[sizes[0]]
        row = ", ".join(f"{size}: {ms:.3f}" for size, ms in medians.items())
        ratio = medians[sizes[-1]] / base
        print(f"  {name:24s} {row}; {sizes[-1]}/{sizes[0]} = {ratio:.2f}x ({targets[name]})")


if __name__ == "__main__":
    main()
