"""Tests of the reasoning-replay consumption harness (loopback servers only)."""
