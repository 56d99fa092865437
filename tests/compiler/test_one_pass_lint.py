"""`capplan lint` reports every problem of an overlay or run config in one run, located.

A schema error in one block does not stop the semantic checks on the blocks that validated, nor
the checks against the base data, nor the compile with a run config (issue 27).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from tests.compiler.test_cli import invoke

HERE = Path(__file__).parent / "one_pass"
REPO = Path(__file__).resolve().parents[2]
LOCATED = re.compile(r"^(?P<file>[^:\s]+):(?P<line>\d+):(?P<col>\d+): (?P<sev>error|warning)\[(?P<code>[a-z-]+)\]: ")


def findings(output: str) -> set[tuple[str, int, str]]:
    """(file name, line, code) of every located diagnostic line."""
    out = set()
    for line in output.splitlines():
        m = LOCATED.match(line)
        if m:
            out.add((Path(m["file"]).name, int(m["line"]), m["code"]))
    return out


def test_the_issue_overlay_reports_every_problem_in_one_run() -> None:
    path = HERE / "issue_27_overlay.yaml"
    code, out = invoke("lint", str(path))
    name = path.name
    assert code == 2
    assert findings(out) == {
        (name, 5, "unknown-key"),            # reasoning_codc
        (name, 6, "wrong-type"),             # empty_retry_count: "two"
        (name, 7, "unknown-policy"),         # json_corce, in the block the schema refused
        (name, 9, "watermark-above-window"),
        (name, 11, "unknown-param"),         # supports_sed
        (name, 14, "bad-rule-value"),        # effort ultra
        (name, 16, "bad-rule-value"),        # temperature 9
        (name, 18, "hides-bundled-presets"),  # '*'
        (name, 21, "unknown-provider"),      # openruter
        (name, 25, "bad-url"),               # endpoint: not-a-url
        (name, 28, "missing-evidence"),      # and the three problems beside it
        (name, 29, "wrong-type"),
        (name, 30, "unknown-litellm-flag"),
        (name, 31, "unknown-litellm-flag"),
    }
    assert "did you mean 'reasoning_codec'?" in out and "did you mean 'json_coerce'?" in out
    assert "did you mean 'openrouter'?" in out and "did you mean 'supports_seed'?" in out
    assert out.rstrip().endswith("capplan lint: 1 file(s) checked: 12 error(s), 2 warning(s)")


# Every code the overlay / run-config linter can emit, and where the fixtures provoke it.
# Read-level codes (the file does not parse, so nothing else in it can be checked) are below.
EVERY_CODE = {
    # schema (core.pydantic_errors), in blocks beside ones that validate
    "empty-glob", "unknown-key", "wrong-type", "unsupported-effort-levels", "override-without-with",
    "with-without-override", "missing-key", "missing-evidence", "unknown-litellm-flag", "credential-value",
    # the file's own semantic checks (checks, policy_checks, value_checks)
    "unknown-policy", "unknown-param", "bad-param", "watermark-above-window", "bad-rule-value", "unrulable-param",
    "override-into-ruled", "bad-url", "bad-regex", "unsafe-name", "not-a-variable-name",
    # against the base data (matching, usage_checks, credential_checks, the version gate)
    "hides-bundled-presets", "shadowed-preset", "preset-replaced", "unknown-provider", "glob-is-model-id",
    "key-to-foreign-endpoint", "engine-version",
    # with the run config (compile, usage_checks, the rate-limit names)
    "glob-matches-no-model", "unused-litellm-model", "unused-binding", "rejected-value", "reasoning-not-declared",
    "reasoning-unexpressible", "bad-model-key", "unknown-key-variable",
}

READ_CODES = {"yaml-syntax", "duplicate-key", "empty-file", "not-a-mapping", "binary-file", "file-not-found",
              "unsupported-tag"}

#: code-shaped strings in the linter's modules that are not diagnostics lint emits, and why
NOT_LINT = {
    "bad-model": "compile --model selection, not a file's content",
    "run-config": "a --kind name", "duplicate-key": "read level", "not-a-mapping": "read level",
}


def test_one_run_reports_one_error_of_every_kind_the_linter_knows(write: Callable[[str, str], Path]) -> None:
    unreadable = [write("syntax.yaml", "presets: [\n"), write("dup.yaml", "presets: {}\npresets: {}\n"),
                  write("empty.yaml", ""), write("list.yaml", "- a\n- b\n"), write("tag.yaml", "presets: !foo {}\n")]
    unreadable.append(unreadable[0].with_name("absent.yaml"))
    binary = unreadable[0].with_name("binary.yaml")
    binary.write_bytes(b"a\x00b")
    run = HERE / "every_code_run.yaml"
    code, out = invoke("lint", "--format", "json", "--config", str(run), str(HERE / "every_code_overlay.yaml"), str(run),
                       str(HERE / "every_code_broken_run.yaml"), str(HERE / "every_code_presets.yaml"),
                       *map(str, unreadable), str(binary))
    assert code == 2
    diags = json.loads(out.split("\ncapplan lint:")[0])["diagnostics"]
    codes = {d["code"] for d in diags}
    assert codes == EVERY_CODE | READ_CODES, (sorted(EVERY_CODE | READ_CODES - codes), sorted(codes - EVERY_CODE - READ_CODES))
    for d in diags:  # located, and each problem once
        assert d["file"] and d["line"] >= 1 and d["col"] >= 1, d
    keys = [(d["file"], d["line"], d["col"], d["code"], d["path"]) for d in diags]
    assert len(keys) == len(set(keys))
    text = json.dumps(diags)
    assert "sk-or-v1-0123456789abcdef" not in text and "user:pw" not in text  # never quoted


def test_the_code_list_above_covers_every_code_the_linter_modules_name() -> None:
    """A new diagnostic code in the lint path must be added to EVERY_CODE (and provoked by a fixture)."""
    modules = ["compiler/checks.py", "compiler/policy_checks.py", "compiler/value_checks.py", "compiler/matching.py",
               "compiler/usage_checks.py", "compiler/credential_checks.py", "compiler/plan_builder.py",
               "compiler/compile.py", "compiler/lint.py", "compiler/loading.py", "core/pydantic_errors.py"]
    named = set()
    for rel in modules:
        named |= set(re.findall(r'"([a-z]+(?:-[a-z]+)+)"', (REPO / rel).read_text(encoding="utf-8")))
    assert named - EVERY_CODE - READ_CODES - set(NOT_LINT) == set()


def test_a_broken_model_block_does_not_hide_the_problems_of_the_others(write: Callable[[str, str], Path]) -> None:
    run = write("run.yaml", """models:
  broken: {provider: openrouter, name: some/model, temperature: hot}
  opus:
    provider: anthropic
    name: claude-opus-4.7
    reasoning: {mode: adaptive, effort_hint: high}
""")
    code, out = invoke("lint", str(run))
    assert code == 2
    assert findings(out) == {("run.yaml", 2, "wrong-type"), ("run.yaml", 6, "reasoning-unexpressible")}


def test_compile_still_refuses_a_file_lint_checked_in_part(tmp_path: Path) -> None:
    code, out = invoke("compile", "--presets-file", str(HERE / "issue_27_overlay.yaml"), "--out", str(tmp_path / "p"))
    assert code == 2 and not (tmp_path / "p").exists()
    assert "error[unknown-key]" in out


def test_url_shaped_fields_are_validated_where_they_are_written(write: Callable[[str, str], Path]) -> None:
    providers = write("providers.yaml", """acme:
  endpoint: ftp://llm.example.com/v1
nohost:
  endpoint: "https:///v1"
creds:
  endpoint: https://admin:hunter2@llm.example.com/v1
spaces:
  endpoint: "https://llm.example.com/v 1"
fine:
  endpoint: http://127.0.0.1:8080/v1
""")
    code, out = invoke("lint", "--kind", "providers", str(providers))
    assert code == 2
    assert findings(out) == {("providers.yaml", n, "bad-url") for n in (2, 4, 6, 8)}
    assert "must be an http:// or https:// URL" in out and "must name a host" in out
    assert "must not carry credentials" in out and "hunter2" not in out


def test_base_url_flags_follow_the_endpoint_rule_and_never_echo_the_value(write: Callable[[str, str], Path]) -> None:
    request = write("request.json", '{"messages": [{"role": "user", "content": "hi"}]}')
    plan = REPO / "golden/plans/gpt-4o.json"
    # userinfo is allowed on a flag (sent as a Basic credential, redacted wherever printed), not in a file
    for url, problem in (("not-a-url", "must be an http:// or https:// URL"),
                         ("ftp://admin:hunter2@llm.example.com/v1", "must be an http:// or https:// URL"),
                         ("http:///v1", "must name a host"), ("https://u:hunter2@/v1", "must name a host")):
        code, out = invoke("preview", "--plan", str(plan), "--api-base", url, str(request))
        assert code == 2 and f"Invalid value for '--api-base': the URL {problem}" in out, out
        assert "hunter2" not in out
    code, out = invoke("trial", "run", str(request), "--plan", str(plan), "--out", "x", "--user-api-base", "ftp://h/")
    assert code == 2 and "Invalid value for '--user-api-base': the URL must be an http:// or https:// URL" in out
