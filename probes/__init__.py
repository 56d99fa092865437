"""Live capability probes: ask a plan's real route the questions the plan's claims rest on.

Owns the question set built from a plan (``questions``; the tool-schema feature family in
``schema_features``), the runner that sends each question once through the executor's client
(``runner``), the dated, route-scoped record of what the route answered (``evidence``; the usage
fields of each accepted answer in ``usage_census``), the overlay snippet that turns refusals into
``param_value_rules`` (``snippet``) and the comparison of today's answers with the plan's claims
(``drift``).

The reasoning-carrier questions (``carriers``) run the replay eval's steps and the cache question
(``cache``) sends the plan's own request twice; ``families`` sets both beside the parameter questions.

May import ``capplan.core``, ``capplan.executor`` and ``capplan.evals`` (the replay eval's steps,
reused, never copied); only the command line imports it.
"""
