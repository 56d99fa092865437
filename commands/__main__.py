"""``python -m commands`` is ``capplan``."""

from commands import run

run()
