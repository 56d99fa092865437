"""Reading run folders back and comparing them: ``capplan trial report`` and the Python API.

- ``stats``     the exact McNemar test and the one-line verdict of a paired comparison
- ``run_data``  a run folder read back as typed trial records (``load_run``)
- ``compare``   several runs joined on (task id, trial index): columns, groups, pairs
- ``formats``   the comparison as markdown, JSON or CSV
- ``why``       the comparison on a page: verdict lines, cost/tokens/latency, flipped tasks, transcript diff
- ``progress``  live progress on stderr while a run goes
- ``view``      ``capplan trial view``: one self-contained HTML page of one or more runs
- ``serve``     ``capplan trial view --serve``: a live local view of every run under a folder, on 127.0.0.1

Untrusted names are made safe for a terminal, a markdown table and CSV by
``capplan.trials.safe_text``, which the run's own ``summary.md`` uses too.

May import: the core, the trial vocabulary and ``run_folder`` (the format it reads). Never the
loop, grading, backends or driver: a report reads what a run left, it never runs anything.
"""
