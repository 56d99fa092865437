"""The trial runner: agent tasks run from compiled plans, one conversation per trial.

It sits on top of the executor (one request in, one result out), and the executor never
imports it. Sub-packages, each saying in its docstring what it owns and what it may import,
from the bottom up:

- ``usersim``     the LLM user simulator and its reply guard
- ``tasks``       task files, environments and task code
- ``run_folder``  records, the call journal, costs, confinement, rendering, resume
- ``grading``     a finished trial's records judged against its task
- ``loop``        the tool-calling loop and its retry classes
- ``backends``    where trials execute (``local`` threads, or a Ray ``cluster``)
- ``report``      runs read back, compared (``trial report``), shown (``view``), progress
- ``importers``   published benchmarks turned into task packs (BFCL)

The modules at this level are the vocabulary every sub-package shares, and the two entry points:

- ``spec``, ``outcome``, ``terminal``  what one trial is (``TrialSpec``), how it ended, and what it leaves
- ``usage_problem``, ``safe_text``     a usage counter's problem; untrusted text made safe to show
- ``runner``      ``run_trial(spec) -> TrialRecords``: a whole trial, no run-folder writes
- ``driver``      many trials on a backend; the only writer of the run folder
- ``api``         ``run(tasks, plans, out=…)`` and ``load_run(path)`` for notebooks, re-exported here

``tests/test_import_layers.py`` holds this order: a sub-package imports only those listed
below it in its own docstring, and nothing imports in a circle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from capplan.trials.api import RunResult, run
    from capplan.trials.report.run_data import LoadedRun, TrialResult, load_run

#: the Python API, loaded when first used: importing the runner's package stays cheap (lint imports parts of it)
_API = {"run": "capplan.trials.api", "RunResult": "capplan.trials.api", "load_run": "capplan.trials.report.run_data",
        "LoadedRun": "capplan.trials.report.run_data", "TrialResult": "capplan.trials.report.run_data"}


def __getattr__(name: str) -> Any:
    if name in _API:
        import importlib

        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["LoadedRun", "RunResult", "TrialResult", "load_run", "run"]
