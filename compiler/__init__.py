"""capplan's compiler: turns preset, provider, pricing and overlay files into capability plans.

Nothing in this package imports litellm: ``capplan lint`` and ``capplan compile`` must start fast.
"""
