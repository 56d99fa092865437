"""Compiler speed, as ratios measured in one run.

- `capplan lint` on one overlay and `capplan compile` of the whole catalogue, each as whole
  processes, against `python -c "import pydantic, ruamel.yaml, click"` (target: compile <= 2.5x),
  in wall time and in the child's CPU time (user+sys; steadier than wall on a loaded machine).
  The verdict is on the paired CPU ratio: the median over rounds of the two commands' CPU in the
  same round (see ``paired``). With PYTHONDONTWRITEBYTECODE set, run `python -m compileall -q core compiler
  executor cli trials evals presets` first, or every run compiles capplan from source.
  Beside them, the same baseline plus validating one one-field pydantic model: the baseline's
  `import pydantic` is lazy (no `BaseModel`, no validator machinery, no plugin lookup), so this
  row is the least any command that validates its input with pydantic can cost; a second floor
  row ends that process as ``capplan lint`` and ``compile`` end theirs, without interpreter
  teardown (see ``capplan.cli.run``). Lint's target is on the first floor row: lint <= 1.1x the
  floor, teardown included (lint itself ends without it).
- `capplan lint` of the example task packs (environments and graders read from their source,
  never imported): no target, a figure that must not grow.
- In-process compile time per model (median) for the bundled catalogue and for the upstream
  tolokaforge-models data (when that package is installed).
- Scaling: compiling the catalogue plus +1 000 / +5 000 synthetic presets (in an overlay) and as
  many models matching them, per model, showing growth is linear, once with prefix globs and once
  with the bundled presets' mix (leading ``*``, ``*`` on both sides, ``?``, classes); with ``--upstream-python``
  (an interpreter with tolokaforge 0.29.0, see ``upstream_worker.py``) the same overlay and models
  resolved by the engine (``build_capabilities`` per model), and the ratio (target <= 1x at +1 000
  and +5 000).
- Memory: peak RSS (the child's ``ru_maxrss``, interpreter and imports included) and CPU of a fresh
  process loading and compiling the catalogue's presets plus +5 000 synthetic presets and models
  (prefix globs) and writing the plans as ``capplan compile --out`` does, and with ``--upstream-python`` a fresh engine process resolving the same overlay
  and models, and the ratios (targets: peak RSS <= 1x, compile CPU <= 0.25x the engine's resolve).

Run: python benchmarks/compiler_speed.py [--repeat N] [--upstream-python PATH] [--scaling-rounds N] [--cpu N] [--memory-only]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cpu_pinning import CPU_HELP, pin_to_one_cpu  # noqa: E402

REPO = Path(__file__).resolve().parents[1]

OVERLAY = """\
presets:
  vendor_model:
    match: ["model-*"]
    reasoning_codec: openai
    params:
      param_value_rules:
        tool_choice:
          auto: {action: drop, evidence: "2026-08-01, vendor API has no auto"}
litellm_models:
  vendor/model-1:
    supports_function_calling: true
    evidence: "2026-08-10, litellm 1.96.0 has no entry; tools work through the openai transport"
"""

FLOOR = """\
import os

os.environ["PYDANTIC_DISABLE_PLUGINS"] = "__all__"  # capplan answers pydantic's plugin lookup too

import pydantic, ruamel.yaml, click
from pydantic import BaseModel


class One(BaseModel):
    name: str


One.model_validate({"name": "x"})
"""

# the same, ending as capplan's short commands do (commands.run): streams flushed, no teardown
FLOOR_NO_TEARDOWN = FLOOR + """
import sys

sys.stdout.flush()
os._exit(0)
"""


Timing = tuple[tuple[float, float], tuple[float, float], list[float]]


def walls(cmds: list[list[str]], repeat: int) -> list[Timing]:
    """((min, median) wall, (min, median) CPU, CPU of each round) of each whole-process command,
    interleaved so load drift hits all alike. CPU is the child's user+sys time: on a shared
    machine, wall time is mostly how the scheduler treated the run, CPU time is what the run cost."""
    walls: list[list[float]] = [[] for _ in cmds]
    cpus: list[list[float]] = [[] for _ in cmds]
    for _ in range(repeat):
        for i, cmd in enumerate(cmds):
            start = time.perf_counter()
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            assert proc.stderr is not None
            errors = proc.stderr.read()
            _, status, usage = os.wait4(proc.pid, 0)
            if os.waitstatus_to_exitcode(status) != 0:
                # a command that fails early is fast: its time would pass for a result
                sys.exit(f"{' '.join(cmd)} exited with {os.waitstatus_to_exitcode(status)}; no figure is "
                         f"reported for a failed run (is the checkout installed, `pip install -e .`?):\n"
                         f"{errors.decode(errors='replace')[-2000:]}")
            walls[i].append(time.perf_counter() - start)
            cpus[i].append(usage.ru_utime + usage.ru_stime)
    return [((min(w), statistics.median(w)), (min(c), statistics.median(c)), c) for w, c in zip(walls, cpus)]


def paired(cpu: list[float], base_cpu: list[float]) -> float:
    """Median over rounds of (this command's CPU / the baseline's CPU in the same round).

    The machine's speed drifts (other tenants, frequency): a minimum or median taken over each
    command separately compares moments that may differ, while a round's two runs are seconds
    apart; the median of the per-round ratios is the steadiest estimate of the ratio.
    """
    return statistics.median(c / b for c, b in zip(cpu, base_cpu))


def per_model(run_config: Path | None, data_dir: Path | None, repeat: int) -> tuple[int, float]:
    """(models, median seconds per model) compiling in-process after a warm-up."""
    from capplan.compiler.compile import compile_models
    from capplan.compiler.loading import load_inputs

    inputs = load_inputs(data_dir=data_dir, run_config=run_config, overlays=[])
    n = len(compile_models(inputs).plans)  # warm-up
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        compile_models(inputs)
        samples.append((time.perf_counter() - start) / n)
    return n, statistics.median(samples)


def upstream_run_config(folder: Path) -> tuple[Path, Path] | None:
    """A run config reaching every upstream preset, or None without the package."""
    try:
        import tolokaforge_models
    except ImportError:
        return None
    from capplan.compiler.inputs.preset_file import PresetFile
    from capplan.compiler.matching import Candidate, first_match
    from capplan.core.yaml_source import read_source

    data = Path(tolokaforge_models.__file__).parent / "data"
    presets = PresetFile.model_validate(read_source(data / "model_presets.yaml").data)
    cands = [Candidate(n, e, None, "bundled") for n, e in presets.presets.items()]  # type: ignore[arg-type]
    lines = ["models:"]
    for cand in cands:
        for glob in cand.entry.match:
            name = glob.replace("*", "x")
            hit = first_match(cands, name, "openrouter")
            if hit is not None and hit.name == cand.name:
                lines += [f"  {cand.name}:", "    provider: openrouter", f"    name: {name!r}"]
                break
    path = folder / "upstream_run.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path, data


#: glob shapes of the synthetic presets: prefix globs only, or the bundled catalogue's mix
SHAPES = ("prefix", "bundled-like")


def synthetic_globs(i: int, shape: str) -> list[str]:
    """Preset i's globs; each matches ``synth/model-{i}-x`` and no other synthetic model.

    ``bundled-like`` cycles through the shapes the bundled presets use (``anthropic/claude-opus-4.7*``
    beside ``*claude-opus-4.7*``, ``*claude*``, ``*/x-ai/grok-4.6*``) plus ``?`` and classes, which
    a prefix index cannot narrow.
    """
    if shape == "prefix":
        return [f"synth/model-{i}-*"]
    return [
        [f"synth/model-{i}-*", f"*/model-{i}-*"],   # a prefix glob beside a leading-star one
        [f"*model-{i}-x*"],                         # stars on both sides
        [f"*/model-{i}-?"],                         # a leading star and ?
        [f"[s]ynth/model-{i}-*", f"*model-{i}-[xy]"],  # classes
    ][i % 4]


def synthetic(folder: Path, n: int, shape: str = "prefix") -> tuple[Path, Path, list[tuple[str, str]]]:
    """An overlay with ``n`` presets and a run config with ``n`` models, model i matching preset i."""
    presets = ["presets:"]
    models = ["models:"]
    pairs = []
    for i in range(n):
        presets += [f"  synth_{i}:", f"    match: {json.dumps(synthetic_globs(i, shape))}", "    reasoning_codec: openai"]
        models += [f"  synth-{i}:", "    provider: openrouter", f"    name: synth/model-{i}-x"]
        pairs.append(("openrouter", f"synth/model-{i}-x"))
    overlay, run = folder / f"synth_{shape}_{n}.yaml", folder / f"synth_run_{shape}_{n}.yaml"
    overlay.write_text("\n".join(presets) + "\n")
    run.write_text("\n".join(models) + "\n")
    return overlay, run, pairs


def capplan_scaled(overlay: Path, run: Path) -> float:
    """Seconds to load the inputs and compile every model of ``run`` with ``overlay``."""
    from capplan.compiler.compile import compile_models
    from capplan.compiler.loading import load_inputs

    start = time.perf_counter()
    compile_models(load_inputs(data_dir=None, run_config=run, overlays=[overlay]))
    return time.perf_counter() - start


def scaling(folder: Path, upstream_python: str | None, rounds: int) -> None:
    """Per-model compile time at +1 000 and +5 000 presets and models, beside the engine's.

    Each size runs ``rounds`` times, alternating with the engine when it is given; the figures are
    medians and the ratio is the median of the rounds' ratios (a single run of seconds can meet a
    slow spell of a shared machine alone).
    """
    worker = None
    if upstream_python:
        worker = subprocess.Popen([upstream_python, str(Path(__file__).parent / "upstream_worker.py")],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        # wait until the engine has imported: pinned to the same CPU, its start-up (seconds of imports)
        # would otherwise run inside the first capplan measurement
        empty = folder / "empty_overlay.yaml"
        empty.write_text("presets: {}\n")
        assert worker.stdin is not None and worker.stdout is not None
        worker.stdin.write(json.dumps({"op": "resolve", "overlay": str(empty), "models": []}) + "\n")
        worker.stdin.flush()
        ready = json.loads(worker.stdout.readline())
        if "error" in ready:
            raise SystemExit(f"upstream worker: {ready['error']}")
    for shape in SHAPES:
        _scale_shape(folder, worker, rounds, shape)
    if worker is not None:
        assert worker.stdin is not None
        worker.stdin.close()
        worker.wait(timeout=60)


def _scale_shape(folder: Path, worker: subprocess.Popen[str] | None, rounds: int, shape: str) -> None:
    per_model: dict[int, float] = {}
    for n in (1000, 5000):
        overlay, run, pairs = synthetic(folder, n, shape)
        ours: list[float] = []
        theirs: list[float] = []
        for _ in range(rounds):
            ours.append(capplan_scaled(overlay, run))
            if worker is not None:
                assert worker.stdin is not None and worker.stdout is not None
                worker.stdin.write(json.dumps({"op": "resolve", "overlay": str(overlay), "models": pairs}) + "\n")
                worker.stdin.flush()
                answer = json.loads(worker.stdout.readline())
                if "error" in answer:
                    raise SystemExit(f"upstream worker: {answer['error']}")
                theirs.append(answer["seconds"])
        mine = statistics.median(ours)
        per_model[n] = mine / n
        line = f"compile +{n} presets and models ({shape} globs): {mine:.2f} s ({mine / n * 1000:.3f} ms per model)"
        if theirs:
            ratio = statistics.median(a / b for a, b in zip(ours, theirs))
            line += f"; upstream resolving the same: {statistics.median(theirs):.2f} s; ratio {ratio:.2f}x"
            line += f" (target <= 1x: {'ok' if ratio <= 1 else 'MISSED'})"
        print(line + f" (median of {rounds})", flush=True)
    print(f"per-model cost at +5 000 over +1 000 ({shape} globs): {per_model[5000] / per_model[1000]:.2f}x "
          "(linear: about 1x, not 5x)")


#: a fresh capplan process: load, compile and write the plans as ``capplan compile --out`` does (each plan
#: streamed into the folder as it is built); prints the CPU seconds of that work (imports excluded)
CAPPLAN_MEMORY = """\
import sys, time
from pathlib import Path
from capplan.compiler.compile import compile_into
from capplan.compiler.loading import load_inputs
from capplan.compiler.plan_output import PlanSetWriter

start = time.process_time()
inputs = load_inputs(data_dir=None, run_config=Path(sys.argv[2]), overlays=[Path(sys.argv[1])])
streamed = compile_into(inputs, None, lambda keys: PlanSetWriter(Path(sys.argv[4]), keys))
streamed.target().commit(streamed.compiled.manifest)
assert len(streamed.compiled.manifest.plans) == int(sys.argv[3])
print(time.process_time() - start)
"""

#: a fresh engine process: the same overlay installed, each model's capabilities resolved
UPSTREAM_MEMORY = """\
import json, sys, time
from tolokaforge.core.llm.presets import build_capabilities, set_overlay_path

models = json.loads(open(sys.argv[3]).read())
start = time.process_time()
set_overlay_path(sys.argv[1])
for provider, name in models:
    build_capabilities(name, provider)
print(time.process_time() - start)
"""


def memory(folder: Path, upstream_python: str | None, rounds: int) -> None:
    """Peak RSS and CPU of compiling the catalogue plus +5 000 presets and models, beside the engine's."""
    n = 5000
    overlay, run, pairs = synthetic(folder, n, "prefix")
    models = folder / "memory_models.json"
    models.write_text(json.dumps(pairs))
    ours = [sys.executable, "-c", CAPPLAN_MEMORY, str(overlay), str(run), str(n), str(folder / "memory_plans")]
    theirs = [upstream_python, "-c", UPSTREAM_MEMORY, str(overlay), str(run), str(models)] if upstream_python else None
    rows: dict[str, list[tuple[float, float, float]]] = {"capplan": [], "upstream": []}
    for _ in range(rounds):  # alternating, so a slow spell of the machine meets both
        rows["capplan"].append(_measure_child(ours))
        if theirs is not None:
            rows["upstream"].append(_measure_child(theirs))
    figures = {who: tuple(statistics.median(r[i] for r in got) for i in range(3)) for who, got in rows.items() if got}
    for who, (rss, cpu, work) in figures.items():
        what = "compiling" if who == "capplan" else "resolving (build_capabilities per model)"
        print(f"memory, {who} {what} the catalogue + {n} presets and models: peak RSS {rss:.0f} MiB; "
              f"CPU {cpu:.2f} s (process), {work:.2f} s (the compile itself) (median of {rounds})", flush=True)
    if "upstream" in figures:
        rss_ratio = statistics.median(a[0] / b[0] for a, b in zip(rows["capplan"], rows["upstream"]))
        cpu_ratio = statistics.median(a[2] / b[2] for a, b in zip(rows["capplan"], rows["upstream"]))
        print(f"memory ratio capplan / upstream: peak RSS {rss_ratio:.2f}x (target <= 1x: "
              f"{'ok' if rss_ratio <= 1 else 'MISSED'}); compile CPU {cpu_ratio:.2f}x (target <= 0.25x: "
              f"{'ok' if cpu_ratio <= 0.25 else 'MISSED'})")


def _measure_child(cmd: list[str]) -> tuple[float, float, float]:
    """(peak RSS MiB, process CPU s, the work's CPU s as the child printed it) of one fresh process."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, errors = proc.stdout.read(), proc.stderr.read()  # type: ignore[union-attr]
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{cmd[0]} exited with {os.waitstatus_to_exitcode(status)}; no figure is reported for a failed "
                 f"run:\n{errors.decode(errors='replace')[-2000:]}")
    # Linux reports ru_maxrss in KiB
    return usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime, float(out.decode().split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--repeat", type=int, default=5, help="runs per measurement (median is reported)"
    )
    parser.add_argument("--upstream-python", help="interpreter with tolokaforge==0.29.0, for the scaling comparison")
    parser.add_argument("--skip-scaling", action="store_true", help="leave out the +1 000 / +5 000 rows")
    parser.add_argument("--scaling-rounds", type=int, default=3,
                        help="runs of each +1 000 / +5 000 compile (and of the engine's), median reported (default 3)")
    parser.add_argument("--skip-memory", action="store_true", help="leave out the peak RSS rows")
    parser.add_argument("--memory-only", action="store_true", help="only the peak RSS rows (with --scaling-rounds rounds)")
    parser.add_argument("--cpu", type=int, default=None, help=CPU_HELP)
    args = parser.parse_args()
    pinned = pin_to_one_cpu(args.cpu)
    if pinned is not None:
        print(f"every measured process pinned to CPU {pinned}")
    bindir = Path(sys.executable).parent
    if args.memory_only:
        with tempfile.TemporaryDirectory() as tmp:
            memory(Path(tmp), args.upstream_python, args.scaling_rounds)
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        overlay = folder / "overlay.yaml"
        overlay.write_text(OVERLAY)
        tasks = sorted(str(p) for p in (REPO / "examples" / "trials").glob("*/*.yaml"))
        base, floor, floor_quick, lint, comp, lint_tasks = walls([
            [sys.executable, "-c", "import pydantic, ruamel.yaml, click"],
            [sys.executable, "-c", FLOOR],
            [sys.executable, "-c", FLOOR_NO_TEARDOWN],
            [str(bindir / "capplan"), "lint", str(overlay)],
            [str(bindir / "capplan"), "compile", "--out", str(folder / "plans")],
            # task files are checked from their source, never imported: no target, a figure to keep
            [str(bindir / "capplan"), "lint", *tasks],
        ], args.repeat)
        (bw, bc, bcpu) = base
        print(f"baseline import pydantic, ruamel.yaml, click: min {bw[0] * 1000:.0f} ms, median {bw[1] * 1000:.0f} ms "
              f"wall; CPU min {bc[0] * 1000:.0f} ms, median {bc[1] * 1000:.0f} ms")
        (fw, fc, fcpu) = floor
        print(f"floor, the baseline plus validating one pydantic model: min {fw[0] * 1000:.0f} ms, median "
              f"{fw[1] * 1000:.0f} ms wall, ratio {fw[0] / bw[0]:.2f}x / {fw[1] / bw[1]:.2f}x; CPU min "
              f"{fc[0] * 1000:.0f} ms, median {fc[1] * 1000:.0f} ms, ratio {fc[0] / bc[0]:.2f}x / {fc[1] / bc[1]:.2f}x; "
              f"paired CPU ratio {paired(fcpu, bcpu):.2f}x")
        (qw, qc, qcpu) = floor_quick
        print(f"floor ending without interpreter teardown, as lint and compile do: CPU min {qc[0] * 1000:.0f} ms, "
              f"median {qc[1] * 1000:.0f} ms, ratio {qc[0] / bc[0]:.2f}x / {qc[1] / bc[1]:.2f}x; "
              f"paired CPU ratio {paired(qcpu, bcpu):.2f}x")
        for label, ((low, mid), (clow, cmid), cpu), target in (("capplan lint (one overlay)", lint, None),
                                                               ("capplan compile (whole catalogue)", comp, 2.5)):
            ratio = paired(cpu, bcpu)
            verdict = ("" if target is None else
                       f" (target <= {target}x on the paired CPU ratio: {'ok' if ratio <= target else 'MISSED'})")
            print(f"{label}: min {low * 1000:.0f} ms, median {mid * 1000:.0f} ms; "
                  f"ratio min/min {low / bw[0]:.2f}x, median/median {mid / bw[1]:.2f}x; "
                  f"CPU min {clow * 1000:.0f} ms, median {cmid * 1000:.0f} ms, ratio {clow / bc[0]:.2f}x / "
                  f"{cmid / bc[1]:.2f}x; paired CPU ratio {ratio:.2f}x{verdict}")
        # lint's target is on what pydantic itself costs: the floor, interpreter teardown included
        floor_ratio = paired(lint[2], fcpu)
        print(f"capplan lint against the floor (teardown included): paired CPU ratio {floor_ratio:.2f}x "
              f"(target <= 1.1x: {'ok' if floor_ratio <= 1.1 else 'MISSED'})")
        (tw, tc, tcpu) = lint_tasks
        print(f"capplan lint ({len(tasks)} example task files, checked statically): min {tw[0] * 1000:.0f} ms, "
              f"median {tw[1] * 1000:.0f} ms; CPU min {tc[0] * 1000:.0f} ms, median {tc[1] * 1000:.0f} ms; "
              f"paired CPU ratio {paired(tcpu, bcpu):.2f}x")
        n, t = per_model(None, None, args.repeat)
        print(
            f"in-process compile, bundled catalogue: {n} models, median {t * 1000:.2f} ms per model"
        )
        upstream = upstream_run_config(folder)
        if upstream is None:
            print("in-process compile, upstream data: skipped (tolokaforge-models not installed)")
        else:
            n, t = per_model(upstream[0], upstream[1], args.repeat)
            print(
                f"in-process compile, upstream tolokaforge-models 1.8.0 data: {n} models, median {t * 1000:.2f} ms per model"
            )
        if not args.skip_scaling:
            scaling(folder, args.upstream_python, args.scaling_rounds)
        if not args.skip_memory:
            memory(folder, args.upstream_python, args.scaling_rounds)


if __name__ == "__main__":
    main()
