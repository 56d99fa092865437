"""``python -m commands`` is ``capplan``."""

from commands import main

main()
