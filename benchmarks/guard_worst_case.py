"""Worst-case time the user-reply guard takes per reply, over a generated adversarial corpus.

The guard runs on every generated user turn, and a reply is arbitrary model output, so its
detectors must answer in time proportional to the reply's length whatever it contains. This
script builds replies designed to hurt a regex engine — long runs of near-matches of every
rule, pathological prefixes repeated to the full length, nested and bounded-plus-one
whitespace, thousands of newlines, overlong words, word salad of every trigger word,
right-to-left and other non-ASCII text — and reports, for 10 KB and 100 KB replies, the
median and the worst time of ``UserReplyGuard.inspect`` and the ratio of the worst 10 KB
figure to the 5 ms target.

    python benchmarks/guard_worst_case.py            # report
    python benchmarks/guard_worst_case.py --check    # also exit 1 when 10 KB misses 5 ms

Figures are wall-clock on the machine that runs it; each reply's time is the median of
``--repeat`` runs so one scheduler hiccup does not become the worst case.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from capplan.trials.usersim.guard import UserReplyGuard

TARGET_MS = 5.0
SIZES = {"10 KB": 10 * 1024, "100 KB": 100 * 1024}

# Each opens a rule and stops short of completing it, so the engine walks as deep as the rule
# allows before failing, at every repetition.
PATHOLOGICAL_PREFIXES = [
    "I'm an ",
    "I am just a big fancy ",
    "I\u2019m your ",
    "I'm the AI ",
    "I'm an AI engineer ",
    "I'm an AI, ML, ",
    "I'm an AI's ",
    "As an AI language ",
    "as a large language model ",
    "I'm not a real ",
    "I'm not a real customer, this is a ",
    "I'm not a real customer. It's just a ",
    "I'm not human ",
    "This is a ",
    "This is just a simulation ",
    "This conversation is a roleplay ",
    "this simulation is a ",
    "that's a training ",
    "This is a simulation of my ",
    "In this simulation, I am playing the role of a ",
    "During the roleplay, we are representing two different frustrated ",
    "For this benchmark, I'm pretending ",
    "In the simulation I represent the customer ",
    "I'm playing a frustrated customer in the ",
    "I'm a simulated ",
    "Your system prompt ",
    "The agent's system prompt probably ",
    "My system prompt says that ",
    "My backstory ",
    "the character description ",
    "according to my ",
    "I was told to play the role of a ",
    "I've been asked to pretend to be ",
    "The Instruction above ",
    "They think I'm a bot. ",
    "This is a simulation, right? ",
    "Your system prompt is odd? ",
    'The bot said: "I am an AI." ',
    "Sorry, as an AI ",
    "<think",
    "</think",
    "\n   <thin",
    "x <think> ",
    " \t\u00a0",
]

TRIGGER_WORDS = (
    "i i'm am not a an the your my this that is was as in for during just real human person "
    "customer user caller ai a.i. llm bot chatbot language model large artificial intelligence "
    "simulation simulated roleplay role-play role play training evaluation exercise benchmark "
    "test playing acting pretending represent system prompt says told backstory persona "
    "according to instruction think <think> </think> , . ' \u2019 : \" -"
).split()

SUPPORT_PROSE = (
    "Hi, my order 7781 arrived broken and I would like a refund to my original card. "
    "The box was crushed and the screen is cracked. I can send photos if that helps. "
)


def _fill(unit: str, size: int) -> str:
    return (unit * (size // max(1, len(unit)) + 1))[:size]


def _spread(prefix: str, gap: str) -> str:
    return gap.join(prefix.split(" "))


def corpus(size: int, seed: int = 7) -> Iterator[tuple[str, str]]:
    """(label, reply) pairs of exactly ``size`` characters."""
    yield "support prose", _fill(SUPPORT_PROSE, size)
    for prefix in PATHOLOGICAL_PREFIXES:
        shown = prefix.strip().replace("\n", "\\n")[:28]
        yield f"repeated {shown!r}", _fill(prefix, size)
        # 8 blanks is the widest gap the rules accept; 9 is one past it.
        yield f"8-blank gaps {shown!r}", _fill(_spread(prefix, " " * 8), size)
        yield f"9-blank gaps {shown!r}", _fill(_spread(prefix, " " * 9), size)
        yield f"newline gaps {shown!r}", _fill(_spread(prefix, "\n \t\n"), size)
        yield f"overlong word after {shown!r}", _fill(prefix + "x" * 31 + " ", size)
        yield f"30-char words after {shown!r}", _fill(prefix + ("y" * 30 + " ") * 3, size)
        # The whole reply is near-misses and the last few characters finally complete a frame.
        yield f"repeated {shown!r} + break at end", _fill(prefix, size - 10) + "I'm an AI."
    for label, unit in [
        ("blanks", " "),
        ("newlines", "\n"),
        ("CRLF", "\r\n"),
        ("U+2028", "\u2028"),
        ("mixed whitespace", " \t\n\u00a0\r\u2003"),
        ("one letter", "a"),
        ("capital I", "I"),
        ("I + blank", "I "),
        ("apostrophes", "'\u2019"),
        ("commas", ","),
        ("full stops", "."),
        ("hyphens", "-"),
        ("angle brackets", "<"),
        ("open quotes", '"\u201c'),
        ("dotted capital I", "\u0130 "),
    ]:
        yield f"run of {label}", _fill(unit, size)
    yield (
        "right-to-left",
        _fill("\u05d0\u05d9\u05e4\u05d4 \u05d4\u05d7\u05d1\u05d9\u05dc\u05d4? \u202e", size),
    )
    yield "Arabic", _fill("\u0623\u064a\u0646 \u0637\u0644\u0628\u064a\u061f ", size)
    yield "CJK", _fill("\u6211\u7684\u9000\u6b3e\u5728\u54ea\u91cc\uff1f", size)
    yield "emoji", _fill("\U0001f642\U0001f4e6 ", size)
    yield "combining marks", _fill("i\u0301\u0308 a\u030a ", size)
    rng = random.Random(seed)
    for salad in range(6):
        words = []
        length = 0
        while length < size:
            word = rng.choice(TRIGGER_WORDS)
            separator = rng.choice([" ", " ", " ", ", ", "\n", "  "])
            words.append(word + separator)
            length += len(word) + len(separator)
        yield f"word salad #{salad}", "".join(words)[:size]


def time_reply(guard: UserReplyGuard, text: str, repeat: int) -> float:
    """Median wall-clock milliseconds of ``repeat`` inspections."""
    runs = []
    for _ in range(repeat):
        started = time.perf_counter()
        guard.inspect(text)
        runs.append((time.perf_counter() - started) * 1000)
    return statistics.median(runs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per reply (median taken)")
    parser.add_argument("--top", type=int, default=5, help="slowest replies listed per size")
    parser.add_argument(
        "--check", action="store_true", help="exit 1 when the 10 KB worst case misses 5 ms"
    )
    args = parser.parse_args(argv)

    guard = UserReplyGuard()
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"load average {load} on {os.cpu_count()} CPUs (wall-clock figures include it)")
    worst_10kb = 0.0
    for size_label, size in SIZES.items():
        timings = []
        for label, text in corpus(size):
            assert len(text) == size, label
            timings.append((time_reply(guard, text, args.repeat), label))
        timings.sort(reverse=True)
        values = [ms for ms, _ in timings]
        worst, worst_label = timings[0]
        if size_label == "10 KB":
            worst_10kb = worst
        print(
            f"{size_label:>6}: {len(values)} replies  median {statistics.median(values):.3f} ms  "
            f"worst {worst:.3f} ms ({worst_label})  worst / {TARGET_MS:g} ms target = "
            f"{worst / TARGET_MS:.2f}"
        )
        for ms, label in timings[1 : args.top]:
            print(f"{'':>8}{ms:8.3f} ms  {label}")
    verdict = "meets" if worst_10kb <= TARGET_MS else "MISSES"
    print(f"10 KB worst case {worst_10kb:.3f} ms {verdict} the {TARGET_MS:g} ms target")
    return 1 if args.check and worst_10kb > TARGET_MS else 0


if __name__ == "__main__":
    sys.exit(main())
