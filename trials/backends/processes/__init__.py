"""``trial run --workers N`` on the local backend: trials in N worker processes of this machine.

One process runs trials in threads, and a turn's CPU (building the request, parsing the answer,
recording) is then bound by one interpreter lock: at 8 ms a turn and 32 trials in flight, a
2-core machine spends most of its wall time waiting for it. The pool spreads the trials over
worker processes, each running its share of ``--concurrency`` in threads, while this process
alone writes the run folder.

- :mod:`.worker`: the child process (``python -m capplan.trials.backends.processes.worker FD``).
- :mod:`.channel`: the socket both ends talk over, one pickled message at a time.
- :mod:`.pool`: the parent's side: starting, feeding, journalling, restarting, stopping.

Every send a worker is about to make reaches this process first, and waits for its answer: the
journal's send line is written and ``--max-cost`` reserves its worst case before the bytes go out,
exactly as with threads. A worker that dies loses only its running attempts, as a lost Ray
worker does: each is noted lost in ``calls.jsonl`` and run again from its start in a restarted
worker, its ``metrics.yaml`` counting the dead attempts (``lost_attempts``).
"""
