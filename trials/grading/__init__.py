"""Grading: a finished trial's records judged against its task.

- ``graders``  the built-in checks (expected_actions, expected_state, expected_outputs,
  per_turn), custom ``module:function`` graders, and the pass verdict that folds them with
  the trial's termination (a trial whose model never answered does not pass)

May import: the trial vocabulary, ``tasks`` (the task file, state encoding) and ``run_folder``
(the record models it reads). Never the loop, backends, report or driver: a grader sees
records, not the run that made them.
"""
