"""capplan: LLM provider and model quirks compiled into frozen, fingerprinted capability plans.

Every import name is under this package. The repository keeps each layer in a top-level folder
(``core/``, ``compiler/``, ``executor/``, ``trials/``, ``conformance/``, ``cli/``, ``evals/``, ``presets/``);
``capplan/`` links them into one namespace, and the wheel holds them as ``capplan.core``,
``capplan.compiler``, ``capplan.executor``, ``capplan.trials``, ``capplan.cli``,
``capplan.evals`` and ``capplan.presets``.
"""
