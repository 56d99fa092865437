"""A run folder written for the tools users already have: ``capplan trial export``.

- ``inspect_log``  the run as inspect_ai eval logs (``.eval``: a zip of JSON members), one per
  plan, that ``inspect view`` opens: samples with their messages and tool calls, the graders'
  verdicts as scores, token usage and cost per model. Written from the format's published shape
  (inspect_ai's ``EvalLog``), never by importing inspect_ai: capplan does not depend on it.
- ``jsonl``        one JSON object per trial, with exactly the fields of ``trial report --format csv``.
- ``write``        where the files go: ``--out`` checked, every file built before the first is
  written, each written atomically inside ``--out`` and nowhere else.

Everything here only reads run folders (:mod:`capplan.trials.report.run_data`); every recorded
text is redacted again by value before it is written, as ``trial view`` does.
"""
