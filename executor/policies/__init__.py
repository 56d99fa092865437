"""Built-in policies, one module per slot; ``capplan.executor.registry`` lists them by name."""
