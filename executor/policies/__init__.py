"""Built-in policies, one module per slot; ``executor.registry`` lists them by name."""
