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


def package_root(here: Path) -> Path | None:
    """The folder holding the ``capplan`` package this harness belongs to, or ``None``.

    Installed, this file is ``site-packages/capplan/evals/reasoning_replay/harness.py``; in a
    checkout it is ``evals/reasoning_replay/harness.py`` beside ``capplan/evals -> ../evals``.
    Either way the root is the first folder above whose ``capplan/evals/reasoning_replay`` is
    this folder. (``here.parents[1]`` would be ``site-packages/capplan`` when installed, and
    putting that on sys.path would expose ``compiler``, ``core`` … as top-level names.)
    """
    for folder in here.parents:
        if (folder / "capplan" / "__init__.py").is_file() and \
                (folder / "capplan" / "evals" / "reasoning_replay").resolve() == here:
            return folder
    return None


if __package__ in (None, ""):
    # Run as a script: this folder is sys.path[0], where module names like routes.py could
    # shadow others. Replace it with the folder holding the capplan package, so the package
    # imports by name, from this copy.
    _here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _here]
    _root = package_root(_here)
    if _root is not None and str(_root) not in sys.path:
        sys.path.insert(0, str(_root))

from capplan.evals.reasoning_replay.commands.cli import main  # noqa: E402

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
