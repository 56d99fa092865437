"""The compiler's commands as a user runs them: outputs, files written, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path


from capplan.compiler.plan_output import write_plan_set
from capplan.compiler.compile import compile_paths
from tests import cli_runner

CLEAN_OVERLAY = """
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


def invoke(*args: str) -> tuple[int, str]:
    result = cli_runner.invoke(*args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def test_compile_writes_one_plan_per_catalogue_model(tmp_path: Path) -> None:
    code, out = invoke("compile", "--out", str(tmp_path / "plans"))
    assert code == 0
    files = sorted(p.stem for p in (tmp_path / "plans").glob("*.json") if p.name != "manifest.json")
    assert files == sorted(compile_paths().plans)
    assert (tmp_path / "plans" / "manifest.json").is_file()
    assert f"compiled {len(files)} plan(s)" in out


def test_compile_one_model_by_provider_and_name(tmp_path: Path) -> None:
    code, _ = invoke("compile", "--model", "openrouter/qwen/qwen3-32b", "--out", str(tmp_path))
    assert code == 0 and sorted(p.name for p in tmp_path.iterdir()) == ["manifest.json", "qwen3-32b.json"]
    code, _ = invoke("compile", "--model", "vendor/new-model", "--out", str(tmp_path / "adhoc"))
    assert code == 0 and sorted(p.name for p in (tmp_path / "adhoc").iterdir()) == ["manifest.json",
                                                                                    "vendor__new-model.json"]


def test_check_reports_stale_and_unused_goldens(tmp_path: Path) -> None:
    golden = tmp_path / "golden"
    compiled = compile_paths()
    write_plan_set(compiled.plans, compiled.manifest, golden)
    assert invoke("compile", "--check", "--golden", str(golden))[0] == 0
    (golden / "gpt-4o.json").write_text("{}\n")
    (golden / "retired-model.json").write_bytes((golden / "o3.json").read_bytes())
    code, out = invoke("compile", "--check", "--golden", str(golden))
    assert code == 1
    assert "stale golden plan: gpt-4o.json" in out and "unused golden plan (no such model): retired-model.json" in out
    assert "capplan compile --update-golden" in out
    assert invoke("compile", "--update-golden", "--golden", str(golden))[0] == 0
    assert not (golden / "retired-model.json").exists()
    assert invoke("compile", "--check", "--golden", str(golden))[0] == 0


def test_nothing_is_written_when_any_input_is_bad(tmp_path: Path, write: Callable[[str, str], Path]) -> None:
    bad = write("bad.yaml", "presets:\n  x:\n    match: ['a/*']\n    reasoning_codec: nope\n")
    code, out = invoke("compile", "--presets-file", str(bad), "--out", str(tmp_path / "out"))
    assert code == 2 and "error[unknown-policy]" in out and "nothing was written" in out
    assert not (tmp_path / "out").exists()


def test_lint_clean_overlay_and_formats(write: Callable[[str, str], Path]) -> None:
    path = write("ok.yaml", CLEAN_OVERLAY)
    assert invoke("lint", str(path)) == (0, "capplan lint: 1 file(s) checked: no problems\n")
    bad = write("bad.yaml", "presets:\n  x:\n    match: ['a/*']\n    schema_sanitiser: strict\n")
    code, out = invoke("lint", "--format", "github", str(bad))
    assert code == 2
    assert out.startswith(f"::error file={bad},line=4,col=5,title=capplan unknown-key::")
    code, out = invoke("lint", "--format", "json", str(bad))
    doc = json.loads(out)
    assert doc["version"] == 1 and doc["diagnostics"][0]["code"] == "unknown-key"
    assert doc["diagnostics"][0]["hint"].startswith("did you mean 'schema_sanitizer'?")


def test_lint_warnings_only_exit_1(write: Callable[[str, str], Path]) -> None:
    path = write("shadow.yaml", "presets:\n  a:\n    match: ['v/*']\n    reasoning_codec: none\n"
                                "  b:\n    match: ['v/x*']\n    reasoning_codec: openai\n")
    code, out = invoke("lint", str(path))
    assert code == 1 and "warning[shadowed-preset]" in out


def test_explain_names_layer_file_and_line() -> None:
    code, out = invoke("explain", "kimi-k3", "policies.message_assembly_policy")
    assert code == 0
    assert 'policies.message_assembly_policy = {"name": "nova", "params": {"empty_assistant_filler": " "}}' in out
    assert "set by preset:moonshot_kimi_k3  bundled:model_presets.yaml:" in out
    code, out = invoke("explain", "gpt-4o", "no.such.field")
    assert code == 2


def test_schemas_on_disk_match_the_models() -> None:
    code, out = invoke("schema", "--check")
    assert code == 0, out + "\nregenerate with: capplan schema --out schemas/"


def test_lint_and_compile_do_not_import_litellm(tmp_path: Path, write: Callable[[str, str], Path]) -> None:
    overlay = write("ok.yaml", CLEAN_OVERLAY)
    script = (
        "import sys\nfrom capplan.cli import main\n"
        "for args in (['lint', sys.argv[1]], ['compile', '--out', sys.argv[2]]):\n"
        "    try:\n        main(args)\n    except SystemExit:\n        pass\n"
        "assert 'litellm' not in sys.modules, 'litellm was imported'\nprint('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", script, str(overlay), str(tmp_path / "p")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr


def test_lint_imports_neither_the_plan_model_nor_runtime_libraries(
        tmp_path: Path, write: Callable[[str, str], Path]) -> None:
    # linting one overlay needs the input models and the base data, nothing the executor runs on
    overlay = write("ok.yaml", CLEAN_OVERLAY)
    heavy = ("capplan.executor.plan", "tenacity", "jsonschema", "jinja2", "litellm", "capplan.executor.client")
    script = (
        "import sys\nfrom capplan.cli import main\n"
        "try:\n    main(['lint', sys.argv[1]])\nexcept SystemExit:\n    pass\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script, str(overlay)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]", proc.stdout


def test_explain_shows_each_generation_flag_with_its_own_layer() -> None:
    code, out = invoke("explain", "claude-opus-4.7-openrouter", "policies.params_policy")
    assert code == 0
    assert "policies.params_policy.params.reasoning_via_extra_body = true\n    set by providers:openrouter" in out
    assert "policies.params_policy.params.supports_seed = false\n    set by preset:anthropic_claude_4_7" in out
    assert 'policies.params_policy.name = "generation_params"\n    set by capplan default' in out


def test_explain_names_the_catalogue_for_identity_fields() -> None:
    code, out = invoke("explain", "kimi-k3", "model")
    assert code == 0 and "capplan default" not in out
    assert "model.name = \"moonshotai/kimi-k3\"\n    set by model:kimi-k3  bundled:catalogue.yaml" in out
    code, out = invoke("explain", "kimi-k3", "effective_preset")
    assert "set by preset:moonshot_kimi_k3  bundled:model_presets.yaml:" in out
