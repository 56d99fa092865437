"""``capplan init [DIR]``: a commented starter project that lints clean and runs offline on the mock."""

from __future__ import annotations

from pathlib import Path

import click

PROJECT = """\
# yaml-language-server: $schema=schemas/project.schema.json
#
# The project file: every capplan command run in this folder (or below it) reads it, so the
# flags it names need not be repeated; a flag given on the command line beats its entry here.
# Paths are relative to this file's folder and must stay inside it. Check it with `capplan lint`.
# The `$schema` lines name schemas/ beside this file, the schemas of the capplan that wrote them
# (nothing publishes them online); after upgrading capplan, `capplan schema --out schemas/`.

# the models to compile (capplan compile --config)
run_config: run.yaml
# operator overlays, applied in order after the run config's own (--presets-file)
overlays:
  - overlays/team.yaml
# where `capplan compile` writes one plan per model (--out)
plans: plans
# golden plans for `capplan compile --check` in CI (--golden)
golden: golden/plans
# defaults of `capplan trial run`
trial:
  tasks: [tasks/]
  plans: [plans/mock-echo.json]
  out: runs/starter
  trials: 2
  concurrency: 2
"""

RUN_CONFIG = """\
# yaml-language-server: $schema=schemas/run-config.schema.json
#
# The run config: which models to compile, with their per-run settings. `mock` is capplan's
# offline provider: deterministic replies, no network, no key. Add a real model beside it, e.g.
#   claude:
#     provider: anthropic
#     name: claude-opus-4.7
# (then `capplan explain claude` shows where each of its settings comes from).
models:
  mock-echo:
    provider: mock
    name: echo-1
    temperature: 0.0
"""

OVERLAY = """\
# yaml-language-server: $schema=../schemas/overlay.schema.json
#
# An operator overlay: what your team knows about the routes it runs, on top of the bundled
# presets. `presets:` are tried before the bundled ones (first match wins), `providers:` blocks
# apply to every model of one provider, `bindings:` add providers (a self-hosted endpoint) and
# `litellm_models:` declare capabilities litellm's map lacks, each with dated evidence.
providers:
  mock:
    # resample an empty completion once
    empty_retry_count: 1
"""

TASK = """\
# yaml-language-server: $schema=../schemas/task.schema.json
#
# One task: a system prompt, the tools (the environment's public methods), a scripted user and
# a grader. `capplan trial run` runs it against every plan; `capplan lint` checks it against
# order_env.py without running it.
id: order-01-status
system_prompt: >-
  You answer customers of a small web shop. Look orders up with the tools; never guess a status.
environment: order_env:OrderDesk
tools:
  - name: order_status
    description: The status of one order.
    parameters:
      type: object
      properties:
        order_id: {type: string, enum: [A-100, A-101], description: "the order number"}
      required: [order_id]
user:
  mode: scripted
  turns:
    - Where is my order A-100?
    - Thanks, that's all.
max_turns: 6
grader:
  expected_actions:
    - name: order_status
      arguments: {order_id: A-100}
"""

ENVIRONMENT = '''\
"""The starter task's environment: every public method is a tool, public attributes are the state."""

from __future__ import annotations


class OrderDesk:
    def __init__(self) -> None:
        self.orders: dict[str, str] = {"A-100": "shipped", "A-101": "packing"}
        self.looked_up: list[str] = []

    def order_status(self, order_id: str) -> dict[str, str]:
        if order_id not in self.orders:
            raise KeyError(f"no order {order_id}; known: {', '.join(sorted(self.orders))}")
        self.looked_up.append(order_id)
        return {"order_id": order_id, "status": self.orders[order_id]}
'''

#: the commented files init writes, relative to DIR (and schemas/, see :func:`starter_files`)
FILES: dict[tuple[str, ...], str] = {
    ("capplan.yaml",): PROJECT,
    ("run.yaml",): RUN_CONFIG,
    ("overlays", "team.yaml"): OVERLAY,
    ("tasks", "order-01-status.yaml"): TASK,
    ("tasks", "order_env.py"): ENVIRONMENT,
}


SCHEMA_FOLDER = "schemas"


def starter_files() -> dict[tuple[str, ...], str]:
    """Everything init writes: :data:`FILES`, and in schemas/ what `capplan schema --out schemas/` writes.

    The starter's `$schema` lines name those files by relative path, so an editor validates
    against the schemas of the installed capplan, offline; no URL is published for them.
    """
    from capplan.compiler.schemas import rendered

    schemas: dict[tuple[str, ...], str] = {(SCHEMA_FOLDER, name): data.decode("utf-8")
                                           for name, data in sorted(rendered().items())}
    return {**FILES, **schemas}


@click.command("init")
@click.argument("directory", required=False, default=".", type=click.Path(path_type=Path), metavar="[DIRECTORY]")
def init_cmd(directory: Path) -> None:
    """Write a commented starter project into DIRECTORY (default: the current folder).

    \b
    It holds capplan.yaml (the project file), run.yaml (a run config with the offline mock
    model), overlays/team.yaml (an operator overlay), tasks/ (one task and its environment) and
    schemas/ (the JSON Schemas the files' `$schema` lines name, as `capplan schema --out` writes them).
    It passes `capplan lint` and runs offline:
      capplan init my-evals && cd my-evals && capplan lint && capplan compile && capplan trial run

    Existing files are never overwritten: when any of them exists (or a file or link stands where
    a folder belongs), nothing is written and each is listed; a write that fails midway removes
    what it wrote. Exit codes: 0 written, 2 a file exists or cannot be written.
    """
    from capplan.cli.starter_files import write_all_or_nothing

    files = starter_files()
    write_all_or_nothing(directory, files)
    for parts in FILES:
        click.echo(f"wrote {directory.joinpath(*parts)}")
    schemas = len(files) - len(FILES)
    click.echo(f"wrote {directory / SCHEMA_FOLDER}/ ({schemas} JSON Schemas, for the files' $schema lines)")
    step = "" if directory.resolve() == Path.cwd().resolve() else f"cd {directory} && "
    click.echo(f"next: {step}capplan lint && capplan compile && capplan trial run")
