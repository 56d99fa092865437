"""Benchmark importers: a published benchmark's data turned into a pack of capplan task files.

An importer reads the benchmark from its installed package when it runs; nothing of the
benchmark is copied into capplan. The task files it writes name the benchmark's own classes
as installed modules, so a trial runs the benchmark's code exactly as published.

May import: the core, the trial vocabulary, ``tasks``, ``run_folder`` (confined writes, the
recorder a replay check uses), ``loop`` (tool results as the loop writes them) and
``grading``. Never backends, report or the driver.
"""
