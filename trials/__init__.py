"""The trial runner: agent tasks run from compiled plans, one conversation per trial.

It sits on top of the executor (one request in, one result out) and the user simulator, and
the executor never imports it. The seams, one module each:

- ``spec``          what one trial is (``TrialSpec``) and what it leaves (``TrialRecords``)
- ``runner``        ``run_trial(spec) -> TrialRecords``: a whole trial, no run-folder writes
- ``loop``          agent turn -> tools -> agent turn ... -> user turn, and its terminals
- ``retry_classes`` empty completion, output-length and parser-error resamples
- ``classify``      raised exception -> termination reason (the API-error retry's trigger)
- ``handoff``       context-window watermark check and the LLM summariser
- ``truncation``    tool-output caps (plan and per-tool, the tighter wins)
- ``turn_budget``   task ``max_turns`` / run cap / plan default / 50
- ``tool_call_ids`` episode-unique tool-call ids
- ``recording``     the trajectory and the metrics sink
- ``grading``       expected_actions, expected_state, ``module:function``
- ``run_folder``    the driver's writer: atomic files, ``runs.jsonl``, resume
- ``backends``      where trials execute (``local`` threads by default)
- ``report``, ``view``  runs read back, compared (``trial report``) and shown as HTML (``trial view``)
- ``api``           ``run(tasks, plans, out=…)`` and ``load_run(path)`` for notebooks, re-exported here
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
