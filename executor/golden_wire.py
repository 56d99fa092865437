"""Golden wire requests: every plan in ``golden/plans`` x every conversation in ``golden/conversations``.

Each pair's golden is the exact litellm kwargs the executor builds (credentials redacted), as
canonical JSON in ``golden/wire/<plan>/<conversation>.json``. A plan that legitimately refuses
a conversation (a rejected value, a reasoning config it cannot express, a schema its sanitiser
cannot make valid) stores the refusal instead: ``{"error": {"code", "type", "message"}}``.
Goldens are written only by this command:

    python -m capplan.executor.golden_wire --update

``--check`` (the default) lists missing, stale and unused goldens and exits 1 when there are any.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from capplan.core.canonical import canonical_bytes
from capplan.executor.client import Client
from capplan.core.errors import UserError
from capplan.executor.messages import ChatRequest, load_request
from capplan.executor.plan import Plan

REGENERATE = "python -m capplan.executor.golden_wire --update"

#: Credentials are redacted in goldens, but a binding that pins its key still needs one to build.
GOLDEN_CREDENTIAL = "golden-credential"


def plan_files(root: Path) -> list[Path]:
    """The plans goldens are made for, sorted."""
    # manifest.json beside the plans holds the run's input digests, not a plan
    return sorted(p for p in (root / "golden" / "plans").glob("*.json") if p.name != "manifest.json")


def conversations(root: Path) -> dict[str, ChatRequest]:
    """The fixed conversation set, by file stem."""
    return {p.stem: load_request(p) for p in sorted((root / "golden" / "conversations").glob("*.json"))}


def render(plan: Plan, request: ChatRequest) -> bytes:
    """The golden bytes for one plan and conversation: redacted kwargs, or the refusal."""
    env = {}
    if plan.binding.binding.api_key_env:
        env[plan.binding.binding.api_key_env] = GOLDEN_CREDENTIAL
    try:
        body: dict[str, Any] = Client(plan, env=env).preview(request)
    except UserError as exc:  # only user-facing refusals are goldens; anything else is a bug and raises
        body = {"error": {"code": exc.code, "type": type(exc).__name__, "message": str(exc)}}
    return canonical_bytes(body)


def expected(root: Path) -> dict[Path, bytes]:
    """Every golden file that should exist, with its content."""
    convs = conversations(root)
    out: dict[Path, bytes] = {}
    for plan_path in plan_files(root):
        plan = Plan.load(plan_path)
        for name, request in convs.items():
            out[root / "golden" / "wire" / plan_path.stem / f"{name}.json"] = render(plan, request)
    return out


def existing(root: Path) -> set[Path]:
    """Golden files on disk."""
    return set((root / "golden" / "wire").glob("*/*.json"))


def check(root: Path) -> list[str]:
    """One line per missing, stale or unused golden (relative to ``root``); empty when all match."""
    want = expected(root)
    have = existing(root)
    problems = []
    for path, content in sorted(want.items()):
        rel = path.relative_to(root)
        if path not in have:
            problems.append(f"missing: {rel}")
        elif path.read_bytes() != content:
            problems.append(f"stale: {rel}")
    problems += [f"unused: {p.relative_to(root)}" for p in sorted(have - set(want))]
    return problems


def update(root: Path) -> list[str]:
    """Write every golden and remove unused ones; returns what changed."""
    want = expected(root)
    changed = []
    for path, content in sorted(want.items()):
        if not path.exists() or path.read_bytes() != content:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
            changed.append(f"wrote: {path.relative_to(root)}")
    for path in sorted(existing(root) - set(want)):
        path.unlink()
        changed.append(f"removed: {path.relative_to(root)}")
        if not any(path.parent.iterdir()):
            path.parent.rmdir()
    return changed


def main(argv: list[str] | None = None) -> int:
    """Check (default) or rewrite the golden wire requests."""
    parser = argparse.ArgumentParser(prog="python -m capplan.executor.golden_wire", description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--update", action="store_true", help="rewrite goldens and remove unused ones")
    # the default, accepted by name so that a CI step can say what it does
    mode.add_argument("--check", action="store_true", help="list missing, stale and unused goldens (the default)")
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="project root (default: current directory)")
    args = parser.parse_args(argv)
    # plans warn once per cause (a dropped temperature, an unsent seed); across every plan x
    # conversation that is noise here, and the goldens themselves show what was sent
    quiet = logging.getLogger("capplan")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        return _run(args.root, args.update)
    finally:
        quiet.setLevel(level)  # every capplan logger is under this one: leave it as it was


def _run(root: Path, update_goldens: bool) -> int:
    if update_goldens:
        for line in update(root):
            print(line)
        return 0
    problems = check(root)
    for line in problems:
        print(line)
    if problems:
        print(f"regenerate with: {REGENERATE}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
