"""Per-model-family policies.

Each module holds one family's policy subclasses. They reach the engine only through public
names, and are registered through the ``capplan.policies`` entry-point group in pyproject.toml,
exactly as a third-party package would register its own.
"""
