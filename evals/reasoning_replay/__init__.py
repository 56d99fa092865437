"""Reasoning-replay consumption eval.

Measures, on the wire, whether a provider and model actually read reasoning that a client
replays from earlier assistant turns: the ``prompt_tokens`` delta between a request that
carries a reasoning trace and a byte-identical request that does not, plus a canary-recall
probe. Standard-library HTTP only; nothing here imports capplan's compiler or executor, only
``capplan.core`` (the redactor and the ``.env`` reader).

Entry points: ``python evals/reasoning_replay/harness.py models|run|report …`` and
``capplan replay models|run|report …`` (same code, see :func:`commands.cli.main`). The
sub-packages are grouped by role; README.md has the map.
"""
