"""Loopback providers that behave like real ones in the ways the harness measures."""
