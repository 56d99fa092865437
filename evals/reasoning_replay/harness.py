"""Reasoning-replay consumption eval: does a provider or model actually read replayed reasoning?

    python evals/reasoning_replay/harness.py models --route nous
    python evals/reasoning_replay/harness.py run --route nous --models x-ai/grok-4.7 --out DIR
    python evals/reasoning_replay/harness.py report --out DIR

Works as a script (run from anywhere) and as ``capplan.evals.reasoning_replay.harness``;
``capplan replay …`` calls the same :func:`main`. ``--help`` explains the method.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    # Run as a script: this folder is sys.path[0], where module names like report.py could
    # shadow others. Replace it with the repository root so the package imports by name.
    _here = Path(__file__).resolve().parent
    _root = str(_here.parents[1])
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _here]
    if _root not in sys.path:
        sys.path.insert(0, _root)

from capplan.evals.reasoning_replay.commands.cli import main  # noqa: E402

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
