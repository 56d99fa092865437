"""``python -m compiler.cli`` is ``capplan``."""

from compiler.cli import main

main()
