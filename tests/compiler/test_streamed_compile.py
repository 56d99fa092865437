"""A compile streams each plan into its destination as it is built: same bytes, one plan alive at a time,
and a failed compile leaves nothing behind."""

from __future__ import annotations

import gc
from collections.abc import Callable
from pathlib import Path

import pytest

from capplan.compiler.compile import compile_into, compile_paths, load_selected
from capplan.compiler.golden import GoldenChecker
from capplan.compiler.plan_output import PlanSetWriter, write_plan_set
from capplan.core.diagnostics import InputError
from capplan.core.reference_mode import reference_mode
from capplan.executor.plan import Plan
from tests.compiler.test_call_settings import REJECTS_PARALLEL_CALLS
from tests.compiler.test_cli import invoke

#: an overlay refusing parallel_tool_calls=true on openai, and a run whose third model asks for it
REFUSING = REJECTS_PARALLEL_CALLS
RUN = ("models:\n  a: {provider: openai, name: gpt-x}\n  b: {provider: anthropic, name: claude-opus-4.7}\n"
       "  c: {provider: openai, name: gpt-y, parallel_tool_calls: true}\n  d: {provider: openai, name: gpt-z}\n")


def listing(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_streamed_plan_set_is_the_bytes_of_the_held_one(tmp_path: Path) -> None:
    held = compile_paths()
    write_plan_set(held.plans, held.manifest, tmp_path / "held")
    inputs, models = load_selected()
    streamed = compile_into(inputs, models, lambda keys: PlanSetWriter(tmp_path / "streamed", keys))
    assert streamed.compiled.plans == {} and streamed.compiled.manifest == held.manifest
    result = streamed.target().commit(streamed.compiled.manifest)
    assert result.written == [f"{key}.json" for key in held.plans]
    assert listing(tmp_path / "streamed") == listing(tmp_path / "held")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_plans_are_let_go_as_they_are_built(write: Callable[[str, str], Path]) -> None:
    run = write("run.yaml", "models:\n" + "".join(f"  m{i}: {{provider: openai, name: gpt-{i}}}\n" for i in range(6)))
    inputs, models = load_selected(run_config=run)
    alive: list[int] = []

    class Counting:
        def add(self, key: str, plan: Plan) -> None:
            alive.append(sum(isinstance(o, Plan) for o in gc.get_objects()))

        def abort(self) -> None:
            raise AssertionError("a clean compile is not aborted")

    before = sum(isinstance(o, Plan) for o in gc.get_objects())
    compile_into(inputs, models, lambda keys: Counting())
    assert len(alive) == 6
    # reference mode: every plan is held until the compile is done, the plain way
    expected = [before + 6] * 6 if reference_mode() else [before + 1] * 6
    assert alive == expected


def test_a_failed_compile_stops_writing_and_leaves_nothing(tmp_path: Path, write: Callable[[str, str], Path]) -> None:
    overlay, run = write("ops.yaml", REFUSING), write("run.yaml", RUN)
    inputs, models = load_selected(run_config=run, overlays=[overlay])
    out = tmp_path / "new" / "deeper" / "plans"
    sent: list[str] = []

    def open_writer(keys: set[str]) -> PlanSetWriter:
        assert keys == {"a", "b", "c", "d"}
        writer = PlanSetWriter(out, keys)
        add = writer.add
        writer.add = lambda key, plan: (sent.append(key), add(key, plan))[-1]  # type: ignore[method-assign]
        return writer

    with pytest.raises(InputError, match="rejected-value"):
        compile_into(inputs, models, open_writer)
    # nothing after the error was written, and the folders the writer made are gone again
    assert sent == ([] if reference_mode() else ["a", "b"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ops.yaml", "run.yaml"]


def test_an_input_error_is_reported_before_an_out_error(tmp_path: Path, write: Callable[[str, str], Path]) -> None:
    overlay, run = write("ops.yaml", REFUSING), write("run.yaml", RUN)
    blocker = write("file", "x")
    code, output = invoke("compile", "--config", str(run), "--presets-file", str(overlay),
                          "--out", str(blocker / "plans"))
    assert code == 2 and "error[rejected-value]" in output and "out-unwritable" not in output
    ok = write("ok.yaml", "models:\n  a: {provider: openai, name: gpt-x}\n")
    code, output = invoke("compile", "--config", str(ok), "--out", str(blocker / "plans"))
    assert code == 2 and f"error[out-unwritable]: {blocker / 'plans'} is under {blocker}, which is a file" in output


def test_check_compares_each_plan_as_it_is_built(tmp_path: Path) -> None:
    held = compile_paths()
    write_plan_set(held.plans, held.manifest, tmp_path)
    (tmp_path / "o3.json").write_bytes(b"{}\n")
    inputs, models = load_selected()
    checked = compile_into(inputs, models, lambda keys: GoldenChecker(tmp_path))
    report = checked.target().finish(checked.compiled.manifest)
    assert (report.changed, report.missing, report.unused) == (["o3.json"], [], [])
