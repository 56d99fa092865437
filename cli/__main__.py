"""``python -m capplan.cli`` is ``capplan``."""

from capplan.cli import run

run()
