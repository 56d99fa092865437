"""The tool-calling loop: one trial's conversation, turn by turn, and its retry classes.

- ``tool_loop``      agent turn -> tools -> agent turn ... -> user turn, until a terminal
- ``retry_classes``  empty completion, output-length and parser-error resamples
- ``classify``       raised exception -> termination reason (the API-error retry's trigger)
- ``handoff``        context-window watermark check and the LLM summariser
- ``tools``          the agent's tool calls run against the trial's environment
- ``truncation``     tool-output caps (plan and per-tool, the tighter wins)
- ``turn_budget``    task ``max_turns`` / run cap / plan default / 50
- ``tool_call_ids``  episode-unique tool-call ids
- ``users``          the user side: a script, or the LLM simulator behind its guard

May import: the executor, the trial vocabulary (``spec``, ``outcome``, ``terminal``), ``tasks``
(task code), ``run_folder`` (the recorder and record models) and ``usersim``. Never ``grading``,
``backends``, ``report``, the runner or the driver: the loop runs a conversation and knows
nothing of how it is judged, where it runs or how it is shown.
"""
