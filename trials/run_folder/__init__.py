"""The run folder: what a trial leaves and how a run is written, resumed and confined.

- ``records``         the files a trial and a run leave, as models (``schemas/`` is generated from them)
- ``recording``       the trial's recorder and metrics sink (in memory, per trial)
- ``call_journal``    every send journalled before and after, so a crash loses no spend
- ``costs``, ``budget``  cost and token totals (unknown stays unknown) and ``--max-cost``
- ``confined``        every path written checked to be inside the run folder
- ``record_yaml``, ``render_process``  record YAML, rendered on a helper process
- ``run_identity``    what makes a run the same run (resume refuses a changed one)
- ``folder``          the driver's writer: atomic files, ``runs.jsonl``, resume, one writer per folder
- ``summary``         ``summary.md`` / ``summary.json`` from ``runs.jsonl``
- ``probe_census``    ``probe.json``: a probe-mode run's telemetry census

May import: the core, the executor, the trial vocabulary and ``tasks`` (a run's identity names
its environments). Never the loop, grading, backends, report or driver: the folder's format is
the contract they all write to or read from.
"""
