"""``capplan trial view --serve``: a live local view over every run under one folder, on 127.0.0.1 only.

- ``catalog``     the run folders under the served folder (no link followed), each run's rows and live state
- ``live``        the trials a run is executing now and their current turn, from its call journal
- ``app``         the one HTML page of the server (jinja2; no external asset; data fetched from the server)
- ``server``      the stdlib HTTP server: loopback only, GET only, bounded requests, nothing outside the folder

The server reads run folders exactly as ``trial report`` and ``trial view`` do
(:mod:`capplan.trials.report.run_data`), and a trial's page is the static view's own page of
that one trial (:mod:`capplan.trials.report.view`). Its comparison's data (verdicts, figures,
flips, the transcript diff) is :mod:`capplan.trials.report.why`, which the static view embeds
too. Nothing here writes anything.
"""
