"""Command line of the harness: ``models``, ``run`` and ``report``.

``main(argv)`` returns an exit code (0 ok, 1 cells left or nothing measured yet, 2 usage or
input error) and never lets a traceback reach the user.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
import traceback
from pathlib import Path

from capplan.core.confined_write import ConfinedPathError, append
from capplan.evals.reasoning_replay import redact
from capplan.evals.reasoning_replay.errors import HarnessError
from capplan.evals.reasoning_replay.fixture import POSITIONS, PROBES
from capplan.evals.reasoning_replay.routes import ROUTES

DESCRIPTION = """\
Which providers and models actually READ the reasoning a client replays from earlier
assistant turns? A 200 only shows a field was accepted; the gateway or the chat template
may still drop it. This harness measures consumption on the wire:

  step 1  a fixed tool-use conversation whose assistant turn carries a ~400-token trace
          (with one canary sentence) in each carrier shape, at two positions:
          in_loop (reasoning on the turn right before the request) and cross_turn (a new
          user message after the tool loop finished); opt-in, loop_steps (a tool loop of
          three steps, the trace on each: a template that reads the whole loop consumes
          all three, one that reads only the last step one). Signal: the prompt_tokens delta
          against the byte-identical request without the trace; canary recall second.
  step 2  a live turn 1 records the model's own reasoning carriers; turn 2 is sent with
          them replayed verbatim and stripped.

Verdicts (T = trace tokens ~ chars/4): consumes-all-turns, in-loop-only, accepted-ignored,
rejected, baseline-failed, direct-lane-not-reached.
"""

EPILOG = """\
examples:
  %(prog)s models --route nous
  %(prog)s run --route nous --models x-ai/grok-4.7,z-ai/glm-5.3 \\
      --want-direct x-ai/grok-4.7,z-ai/glm-5.3 --out $OUT
  %(prog)s run --route nous --models portal-max:4 --out $OUT
  %(prog)s run --route openai-responses --models gpt-6-luna --out $OUT
  %(prog)s run --route gemini-native --models gemini-3.5-flash --out $OUT
  %(prog)s run --route custom --kind chat --base-url https://api.deepseek.com/v1 \\
      --key-env DEEPSEEK_API_KEY --models deepseek-reasoner --out $OUT
  %(prog)s report --out $OUT

credentials: every route reads its key variable (nous: NOUS_API_KEY; --key-env names
another) from the environment, then ~/.hermes/.env; nous without NOUS_API_KEY reads a Hermes
login's ~/.hermes/auth.json (providers.nous.agent_key, else access_token) and re-reads it
once on a 401. Keys are never written or printed.

output (in --out): calls.jsonl (one raw record per request), cost.jsonl (one cost per
request; the budget is their sum), runs.jsonl (seed, canary, trace size per run),
cells.jsonl (cell states for resuming); report adds matrix.md, matrix.json, heatmap.svg.

exit codes: 0 done, 1 cells left for a rerun (budget, network) or nothing to report,
2 usage or input error, 3 internal error. Keep result folders outside the repository.
"""


def build_parser(prog: str = "harness.py") -> argparse.ArgumentParser:
    """The argument parser; its help is the harness's manual."""
    parser = argparse.ArgumentParser(
        prog=prog, description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="{models,run,report}")
    routes = ", ".join(sorted(ROUTES))

    def route_options(p: argparse.ArgumentParser, required: bool) -> None:
        p.add_argument("--route", required=required, default=None if required else "nous",
                       help=f"a named route ({routes}) or 'custom'"
                            + ("" if required else "; default nous"))
        p.add_argument("--kind", choices=("chat", "responses", "gemini"),
                       help="wire format of a custom route (default chat)")
        p.add_argument("--base-url", help="endpoint base, e.g. https://api.deepseek.com/v1 "
                       "(overrides a named route's)")
        p.add_argument("--key-env", help="variable holding the key (environment, then ~/.hermes/.env)")
        p.add_argument("--timeout", type=float, default=180.0, help="seconds per request (default 180)")

    models = sub.add_parser("models", help="list the ids worth measuring on a route (default nous)",
                            description="List what a route serves, minus aliases, :batch twins, "
                                        "non-text and non-reasoning ids, cheapest output first.")
    route_options(models, required=False)
    models.add_argument("--json", action="store_true", help='print {"test": [...], "skip": [[id, why]]}')

    run = sub.add_parser("run", help="measure models (resumable; shares --out budget)",
                         description="Measure the models' cells into --out. Rerunning the same "
                                     "command skips finished cells; the budget counts every run "
                                     "that shares --out. Progress goes to stderr.")
    route_options(run, required=True)
    run.add_argument("--models", required=True, metavar="IDS",
                     help="comma list of ids, or portal-all / portal-max:N (N = USD per 1M output "
                          "tokens, from the Portal price list)")
    run.add_argument("--exclude", default="", metavar="IDS", help="comma list of ids to leave out")
    run.add_argument("--out", required=True, metavar="DIR", help="result folder (keep it outside the repository)")
    run.add_argument("--budget", type=float, default=10.0, metavar="USD",
                     help="spending cap over every run sharing --out (default 10)")
    run.add_argument("--want-direct", default="", metavar="IDS",
                     help="nous ids to resample until a direct-lane (non gen-) response")
    run.add_argument("--lane-attempts", type=int, default=4, metavar="N",
                     help="samples per request for --want-direct ids (default 4)")
    run.add_argument("--steps", default="text,opaque",
                     help="text (synthetic carriers) and/or opaque (live turn 1); default both")
    run.add_argument("--positions", default=",".join(POSITIONS), help="in_loop, cross_turn and/or loop_steps (step 1 only); "
                     "default in_loop,cross_turn")
    run.add_argument("--variants", default="", help="subset of the step-1 carriers (default: all of the "
                     "route's kind: chat reasoning_content,reasoning,reasoning_details,all; responses "
                     "summary_item,content_item; gemini thought_part)")
    run.add_argument("--probe", choices=sorted(PROBES), default="std",
                     help="std asks about 'earlier reasoning'; alt avoids the phrase. A 403 on the "
                          "std baseline reruns the position with alt anyway (default std)")
    run.add_argument("--seed", type=int, default=None, help="trace/canary seed; fixed for a folder once chosen")
    run.add_argument("--max-tokens", type=int, default=512, metavar="N",
                     help="output allowance of measured requests (default 512)")
    run.add_argument("--turn1-max-tokens", type=int, default=1024, metavar="N",
                     help="output allowance of the live turn 1 (default 1024)")
    run.add_argument("--turn1-tool-choice", choices=("auto", "required", "tool"), default="auto",
                     help="force step 2's live turn-1 tool call so its carriers are captured: required, or "
                          "tool (get_weather by name); recorded in the row. A route that refuses the field "
                          "(4xx) is asked again without it. Default auto: send no tool_choice")
    run.add_argument("--effort-param", choices=("reasoning", "reasoning_effort", "none"),
                     help="how a chat route asks for reasoning effort (default: the route's)")
    run.add_argument("--workers", type=int, default=4, metavar="N", help="cells measured at once (default 4)")
    run.add_argument("--rps", type=float, default=None, metavar="R",
                     help="request starts per second on the route, shared by all workers "
                          "(default: the route's, mostly 2; 0 = unpaced)")
    run.add_argument("--retries", type=int, default=2, metavar="N",
                     help="retries of 429/5xx/network failures per request (default 2)")
    run.add_argument("--prices", metavar="FILE", help="prices for estimates: a saved /models response or "
                     '{"model": [in, out]} in USD per 1M (default: the Portal list)')
    run.add_argument("--quiet", action="store_true", help="no progress lines")

    report = sub.add_parser("report", help="write matrix.md, matrix.json and heatmap.svg",
                            description="Summarise --out into matrix.md / matrix.json (and "
                                        "heatmap.svg); print the markdown matrix.")
    report.add_argument("--out", required=True, metavar="DIR", help="result folder of earlier runs")
    report.add_argument("--overlay", nargs="?", const="", default=None, metavar="FILE",
                        help="also write a capplan overlay snippet with each verdict as dated "
                             "evidence (default FILE: <out>/overlay_snippet.yaml)")
    report.add_argument("--overlay-route", default=None, metavar="PROVIDER",
                        help="key the snippet's entries by this capplan provider key instead of the "
                             "harness route name (capplan applies a verdict to that provider's plans), "
                             "e.g. llamacpp for --route custom against a local llama-server")
    report.add_argument("--no-heatmap", action="store_true", help="skip heatmap.svg")
    return parser


def main(argv: list[str] | None = None, prog: str = "harness.py") -> int:
    """Run one command; returns the exit code. ``prog`` names the command in help and usage."""
    parser = build_parser(prog)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits on --help and on usage errors
        return int(exc.code or 0)
    args.prog = prog  # hints name the command as the user typed it
    try:
        if args.command == "models":
            from capplan.evals.reasoning_replay.commands.models import models_command
            return models_command(args)
        if args.command == "run":
            from capplan.evals.reasoning_replay.commands.run import run_command
            return run_command(args)
        from capplan.evals.reasoning_replay.commands.report import report_command
        return report_command(args)
    except HarnessError as exc:
        print(f"error: {redact.scrub(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted; every finished call is recorded, rerun the same command to resume",
              file=sys.stderr)
        return 130
    except Exception as exc:  # a defect: say so in one line, keep the details in a file
        where = _internal_error_log(args, exc)
        print(f"error: internal error {type(exc).__name__}: {redact.scrub(str(exc))}{where}",
              file=sys.stderr)
        return 3


def _internal_error_log(args: argparse.Namespace, exc: Exception) -> str:
    """Append the traceback to ``<out>/errors.log``; returns a hint naming it ('' if unwritable)."""
    folder = Path(getattr(args, "out", None) or ".")
    path = folder / "errors.log" if folder.is_dir() else Path("reasoning-replay-errors.log")
    text = "".join(traceback.format_exception(exc))
    try:  # inside --out, as every write there: a link under the name is refused, never followed
        append(path.parent, (path.name,), (redact.scrub(textwrap.indent(text, "  ")) + "\n").encode("utf-8"))
    except (ConfinedPathError, OSError):
        return ""
    return f" (details in {path})"
