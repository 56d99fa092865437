"""Reading run folders back and comparing them: ``capplan trial report`` and the Python API.

- ``stats``     the exact McNemar test and the one-line verdict of a paired comparison
- ``run_data``  a run folder read back as typed trial records (``load_run``)
- ``compare``   several runs joined on (task id, trial index): columns, groups, pairs
- ``formats``   the comparison as markdown, JSON or CSV

Untrusted names are made safe for a terminal, a markdown table and CSV by
``capplan.trials.safe_text``, which the run's own ``summary.md`` uses too.
"""
