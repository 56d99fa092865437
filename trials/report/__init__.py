"""Reading run folders back and comparing them: ``capplan trial report`` and the Python API.

- ``text``      untrusted names made safe for a terminal, a markdown table and CSV
- ``stats``     the exact McNemar test and the one-line verdict of a paired comparison
- ``run_data``  a run folder read back as typed trial records (``load_run``)
- ``compare``   several runs joined on (task id, trial index): columns, groups, pairs
- ``formats``   the comparison as markdown, JSON or CSV
"""
