"""Provider conformance: plans proven, offline, against the rules providers enforce.

The rules are data (``capplan/presets/conformance/*.yaml``: protocol, route and model scope, the
condition a request breaks, the provider's exact status and error body, and the public source
it was observed in). Loopback emulators, one module per protocol under ``emulators/``, enforce
them with those errors and answer like the provider on success (minting the reasoning carriers
a replay must return intact). ``capplan conformance`` drives every plan through capplan's real
executor, transports and trial loop against the matching emulator and prints a plan x rule matrix.
"""
