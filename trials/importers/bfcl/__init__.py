"""BFCL multi-turn (``bfcl-eval`` on the package registry) as capplan task packs.

``source`` reads the installed benchmark's entries, ``tool_schema`` converts its function docs as
its OpenAI function-calling handler does, ``ground_truth`` parses and replays the ground-truth
calls, ``pack`` writes the task files and ``checker`` is the grader that hands a trial to BFCL's
own ``multi_turn_checker``.
"""
