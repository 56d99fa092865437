"""``report``: matrix.md, matrix.json and heatmap.svg from an output folder (and, on request,
a capplan overlay snippet). Derived files are rewritten whole; the logs are only read."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from capplan.core.confined_write import ConfinedPathError, write_atomic
from capplan.evals.reasoning_replay import redact
from capplan.evals.reasoning_replay.analysis import heatmap, matrix_md, overlay
from capplan.evals.reasoning_replay.analysis.summary import Folder, load, rows
from capplan.evals.reasoning_replay.errors import HarnessError
from capplan.evals.reasoning_replay.store.confinement import problem
from capplan.evals.reasoning_replay.store.outdir import OutDir


def report_command(args: argparse.Namespace) -> int:
    """Exit 0 with the matrix printed, or 1 when the folder holds no measurement yet."""
    prog = getattr(args, "prog", "harness.py")
    out = OutDir(Path(args.out), create=False, prog=prog)
    folder = load(out)
    for warning in folder.problems:
        print(f"warning: {warning}", file=sys.stderr)
    table = rows(folder)
    if not table:
        print(f"nothing measured yet in {out.path}: no readable records in calls.jsonl or "
              f"cells.jsonl; run `{prog} run … --out {out.path}` first", file=sys.stderr)
        return 1
    meta = _meta(out, folder)
    markdown = matrix_md.render(meta, table)
    written = [_write(out.path / "matrix.md", markdown),
               _write(out.path / "matrix.json", json.dumps({**meta, "rows": table}, indent=1,
                                                           ensure_ascii=False) + "\n")]
    if not args.no_heatmap:
        title = f"Reasoning-replay consumption — T = {meta['trace_tokens']:.0f} tokens"
        written.append(_write(out.path / "heatmap.svg", heatmap.render(table, title)))
    if args.overlay is not None:
        target = Path(args.overlay) if args.overlay else out.path / "overlay_snippet.yaml"
        written.append(_write(target, overlay.render(table, meta, route_as=args.overlay_route)))
    print(markdown)
    print("wrote " + ", ".join(str(p) for p in written), file=sys.stderr)
    return 0


def _meta(out: OutDir, folder: Folder) -> dict[str, Any]:
    starts = [r for r in folder.runs if r.get("event") == "start"]
    first = starts[0] if starts else {}
    return {"out": str(out.path), "runs": len(starts), "seed": first.get("seed"),
            "canary": first.get("canary"), "trace_tokens": folder.trace_tokens,
            "spent": round(folder.spent, 6), "problems": folder.problems}


def _write(path: Path, text: str) -> Path:
    """Replace ``path`` atomically, so a crash never leaves half a report.

    Written as every file of an output folder is (a link under its name refused, never followed);
    an ``--overlay FILE`` elsewhere is the user's own path, its folder taken as given.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path.parent, (path.name,), redact.scrub(text).encode("utf-8"), mode=0o644)
    except ConfinedPathError as exc:
        raise problem(exc) from None
    except OSError as exc:
        raise HarnessError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path
