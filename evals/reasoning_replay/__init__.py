"""Reasoning-replay consumption eval.

Measures, on the wire, whether a provider and model actually read reasoning that a client
replays from earlier assistant turns: the ``prompt_tokens`` delta between a request that
carries a reasoning trace and a byte-identical request that does not, plus a canary-recall
probe. Standard-library HTTP only; nothing here imports capplan's compiler or executor.

Entry points: ``python evals/reasoning_replay/harness.py models|run|report …`` and
``capplan replay models|run|report …`` (same code, see :func:`cli.main`).
"""
