"""Tasks, their environments and task code: what a trial runs against.

- ``taskfile``            the task file's schema (``TaskFile``), checked field by field
- ``loading``             loading and linting task files, every problem located, before any call
- ``task_paths``, ``task_kind``, ``task_source``  which files are tasks, and of which kind
- ``environment``         a task's environment built from its components (``module:Class``)
- ``static_environment``  what can be checked of an environment without importing task code
- ``state_encoding``      Python objects -> the data ``expected_state`` compares
- ``code_refs``           ``module:attribute`` references, resolved only where task code may run
- ``task_code``           the one place task code is called, on its own thread with a deadline

May import: the core, the executor's tool schemas and the trial vocabulary (``spec``,
``outcome``, ``terminal``). Nothing else of the trial runner: linting a task must not pull in
the loop or the run folder.
"""
