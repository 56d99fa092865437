"""capplan's executor: loads a compiled plan and applies its policies to each request.

The executor resolves nothing at request time (no glob matching, no YAML, no merge) and never
imports the compiler.
"""
