"""Compiler speed, as ratios measured in one run.

- `capplan lint` on one overlay and `capplan compile` of the whole catalogue, each as whole
  processes, against `python -c "import pydantic, ruamel.yaml, click"` (targets: lint <= 1.5x,
  compile <= 2.5x).
- In-process compile time per model (median) for the bundled catalogue and for the upstream
  tolokaforge-models data (when that package is installed).

Run: python benchmarks/compiler_speed.py [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OVERLAY = """\
presets:
  vendor_model:
    match: ["vendor/model-*"]
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


def walls(cmds: list[list[str]], repeat: int) -> list[tuple[float, float]]:
    """(min, median) wall time of each whole-process command, interleaved so load drift hits all alike."""
    samples: list[list[float]] = [[] for _ in cmds]
    for _ in range(repeat):
        for i, cmd in enumerate(cmds):
            start = time.perf_counter()
            subprocess.run(cmd, check=False, capture_output=True, timeout=300)
            samples[i].append(time.perf_counter() - start)
    return [(min(s), statistics.median(s)) for s in samples]


def per_model(run_config: Path | None, data_dir: Path | None, repeat: int) -> tuple[int, float]:
    """(models, median seconds per model) compiling in-process after a warm-up."""
    from compiler.compile import compile_models
    from compiler.loading import load_inputs

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
    from compiler.inputs.preset_file import PresetFile
    from compiler.matching import Candidate, first_match
    from compiler.yaml_source import read_source

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


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--repeat", type=int, default=5, help="runs per measurement (median is reported)"
    )
    args = parser.parse_args()
    bindir = Path(sys.executable).parent
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        overlay = folder / "overlay.yaml"
        overlay.write_text(OVERLAY)
        base, lint, comp = walls([
            [sys.executable, "-c", "import pydantic, ruamel.yaml, click"],
            [str(bindir / "capplan"), "lint", str(overlay)],
            [str(bindir / "capplan"), "compile", "--out", str(folder / "plans")],
        ], args.repeat)
        print(f"baseline import pydantic, ruamel.yaml, click: min {base[0] * 1000:.0f} ms, median {base[1] * 1000:.0f} ms")
        for label, (low, mid), target in (("capplan lint (one overlay)", lint, 1.5),
                                          ("capplan compile (whole catalogue)", comp, 2.5)):
            print(f"{label}: min {low * 1000:.0f} ms, median {mid * 1000:.0f} ms; "
                  f"ratio min/min {low / base[0]:.2f}x, median/median {mid / base[1]:.2f}x (target <= {target}x)")
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


if __name__ == "__main__":
    main()
