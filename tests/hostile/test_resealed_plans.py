"""Plans from a pull request, edited and resealed (fingerprint recomputed), through every command that loads one.

A plan is data the executor trusts once its fingerprint matches, and anyone can recompute a
fingerprint. So every value in it is checked where the plan is loaded, against the same rules the
compiler applies to its inputs: ``model.key`` is one safe path segment (``../../../escaped`` made
``trial run`` write beside ``--out``), numbers are finite and bounded (``default_max_turns:
10**12``), endpoints are http(s) URLs with a host (``file:///etc/passwd``), attribution headers
are one line (a CRLF referer made every call fail as a "connection error" a minute later), a
``rate_limit_patterns`` entry compiles, and nesting is bounded. Each case runs ``preview``,
``send``, ``trial run`` (on the mock plan, ``--out tmp/runs/a/b``), ``gateway check`` and
``diff``: exit 2, a located line naming the field and the problem, no traceback, no canary
secret in any output, and nothing written anywhere.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from pydantic import ValidationError

from capplan.core.canonical import canonical_bytes, sha256_hex
from capplan.executor.plan import DEFAULT_OPENROUTER_REFERER, DEFAULT_OPENROUTER_TITLE, Plan, load_plan
from capplan.core.value_types import MAX_SECONDS, MAX_TOKENS, MAX_TURNS
from tests import cli_runner

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "golden" / "plans"
MOCK = GOLDEN / "mock-echo.json"
TASK = REPO / "examples" / "trials" / "inventory_desk" / "inv-01-check-stock.yaml"
CANARY = "sk-canary-0c9e4b7a2f6d8135"
OUT = "tmp/runs/a/b"
ENV: dict[str, str | None] = {
    "OPENAI_API_KEY": CANARY,
    "LLM_PROXY_BASE_URL": None,
    "LLM_PROXY_API_KEY": None,
    "LLM_PROXY_HEADERS": None,
}

Body = dict[str, Any]


def reseal(data: Body) -> bytes:
    """The plan file for ``data`` with its fingerprint recomputed as capplan computes it
    (``capplan.executor.plan.verify_fingerprint``: sha256 of the canonical body without the fingerprint)."""
    body = {k: v for k, v in data.items() if k != "fingerprint"}
    return canonical_bytes({**body, "fingerprint": sha256_hex(canonical_bytes(body))})


def reseal_text(text: str) -> bytes:
    """A plan file edited as text (a spelling ``canonical_bytes`` never writes), resealed over its
    body bytes: the file without its fingerprint line, which is what the loader hashes."""
    line = re.search(r'\n  "fingerprint": "[0-9a-f]*",', text)
    assert line is not None
    body = text[: line.start()] + text[line.end():]
    return (text[: line.start()] + f'\n  "fingerprint": "{sha256_hex(body.encode())}",' + text[line.end():]).encode()


def golden() -> Body:
    data: Body = json.loads(MOCK.read_text(encoding="utf-8"))
    return data


def _set(path: str, value: Any) -> Callable[[Body], None]:
    """An edit setting the dotted ``path`` of a plan body to ``value``."""
    *parents, leaf = path.split(".")

    def edit(data: Body) -> None:
        node = data
        for part in parents:
            node = node[part]
        node[leaf] = value

    return edit


def _with_openrouter(**fields: str) -> Callable[[Body], None]:
    def edit(data: Body) -> None:
        data["openrouter"] = {"allow_fallbacks": True, "data_collection": "deny", "provider_order": [],
                              "referer": DEFAULT_OPENROUTER_REFERER, "title": DEFAULT_OPENROUTER_TITLE, **fields}

    return edit


def _with_pricing(**prices: float) -> Callable[[Body], None]:
    def edit(data: Body) -> None:
        data["pricing"] = {"key": "mock/echo-1", "input": 0.0, "output": 0.0, "cache_read": None, "cache_write": None,
                           **prices}

    return edit


#: (edit, field the error names, what it says about it)
CASES: dict[str, tuple[Callable[[Body], None], str, str]] = {
    # model.key becomes the model's folder under --out
    "key-parent": (_set("model.key", "../../../escaped"), "model.key", "must not contain '..'"),
    "key-absolute": (_set("model.key", "/tmp/escaped"), "model.key", "contains '/'"),
    "key-separator": (_set("model.key", "a/b"), "model.key", "contains '/'"),
    "key-nul": (_set("model.key", "mock\0echo"), "model.key", "contains U+0000"),
    "key-newline": (_set("model.key", "mock\necho"), "model.key", "contains U+000A"),
    "key-pipe": (_set("model.key", "mock|echo"), "model.key", "contains '|'"),
    "key-ansi": (_set("model.key", "\x1b[31mmock"), "model.key", "contains U+001B"),
    "key-empty": (_set("model.key", ""), "model.key", "must not be empty"),
    "key-huge": (_set("model.key", "k" * 200_000), "model.key", "is 200000 characters long; at most 128"),
    # numbers: finite, and bounded like the compiler's inputs
    "turns": (_set("loop.default_max_turns", 10**12), "loop.default_max_turns",
              f"less than or equal to {MAX_TURNS}"),
    "context": (_set("loop.max_context_tokens", 10**12), "loop.max_context_tokens",
                f"less than or equal to {MAX_TOKENS}"),
    "watermark": (_set("loop.context_watermark", 0), "loop.context_watermark", "greater than 0"),
    "tool-output": (_set("loop.tool_output_max_chars", 10**12), "loop.tool_output_max_chars", "less than or equal"),
    "retries": (_set("loop.empty_retry_count", 10**6), "loop.empty_retry_count", "less than or equal to 100"),
    "timeout": (_set("loop.api_call_timeout_s", 1e9), "loop.api_call_timeout_s",
                f"less than or equal to {MAX_SECONDS:g}"),
    "max-tokens": (_set("request_defaults.max_tokens", 10**12), "request_defaults.max_tokens", "less than or equal"),
    "budget": (_set("request_defaults.reasoning.budget_tokens", 10**12), "request_defaults.reasoning",
               f"budget_tokens must be at most {MAX_TOKENS}"),
    "seed": (_set("request_defaults.seed", 2**64), "request_defaults.seed", "less than or equal"),
    "temperature": (_set("request_defaults.temperature", 7.5), "request_defaults.temperature",
                    "less than or equal to 2"),
    "top-p": (_set("request_defaults.top_p", 0.0), "request_defaults.top_p", "greater than 0"),
    "price-negative": (_with_pricing(input=-1.0), "pricing.input", "greater than or equal to 0"),
    "price-cache": (_with_pricing(cache_read=-0.5), "pricing.cache_read", "greater than or equal to 0"),
    "price-huge": (_with_pricing(output=1e12), "pricing.output", "less than or equal"),
    # URLs: http(s) with a host, no userinfo
    "endpoint-file": (_set("binding.binding.endpoint", "file:///etc/passwd"), "binding.binding.endpoint",
                      "must be an http:// or https:// URL"),
    "endpoint-ftp": (_set("binding.binding.endpoint", "ftp://files.example.com/v1"), "binding.binding.endpoint",
                     "must be an http:// or https:// URL"),
    "endpoint-no-host": (_set("binding.binding.endpoint", "http:///v1"), "binding.binding.endpoint",
                         "must name a host"),
    "endpoint-userinfo": (_set("binding.binding.endpoint", f"https://ops:{CANARY}@llm.example.com/v1"),
                          "binding.binding.endpoint", "must not carry credentials"),
    "endpoint-ipv6": (_set("binding.binding.endpoint", "http://[::1/v1"), "binding.binding.endpoint",
                      "is not a valid URL"),
    "endpoint-port": (_set("binding.binding.endpoint", "http://llm.example.com:99999/v1"),
                      "binding.binding.endpoint", "is not a valid URL"),
    "endpoint-crlf": (_set("binding.binding.endpoint", f"https://llm.example.com/v1\r\nX-Key: {CANARY}"),
                      "binding.binding.endpoint", "must not contain whitespace or control characters"),
    # strings that become HTTP header values
    "referer-crlf": (_with_openrouter(referer=f"https://example.com\r\nAuthorization: Bearer {CANARY}"),
                     "openrouter.referer", "contains a line break (CR or LF)"),
    "title-control": (_with_openrouter(title="capplan\x1b[2Jeval"), "openrouter.title", "control character"),
    "title-empty": (_with_openrouter(title=""), "openrouter.title", "at least 1 character"),
    "upstream-newline": (_with_openrouter(provider_order=["Anthropic\nX: y"]),  # type: ignore[arg-type]
                         "openrouter.provider_order[0]", "should match pattern"),
    # regexes compiled once per client
    "pattern": (_set("binding.binding.rate_limit_patterns", ["\\brate limit", "(unclosed"]),
                "binding.binding.rate_limit_patterns[1]", "is not a regular expression (missing ), unterminated"),
    # a key the model does not know, named like a credential: the path shows it as <key>
    "extra-secret-key": (_set(f"loop.{CANARY}", 1), "loop.<key>", "Extra inputs are not permitted"),
}

#: text-level edits: what canonical_bytes never writes, resealed over the body bytes
TEXT_CASES: dict[str, tuple[Callable[[str], str], str]] = {
    "deep": (lambda t: t.replace('"params": {}', '"params": {"x": ' + "[" * 100_000 + "]" * 100_000 + "}", 1),
             "nested more than 64 levels deep"),
    "infinity": (lambda t: t.replace('"api_call_timeout_s": 120.0', '"api_call_timeout_s": 1e999'),
                 "loop.api_call_timeout_s"),
    "nan": (lambda t: t.replace('"temperature": 0.0', '"temperature": NaN'), "NaN is not a JSON number"),
    "huge-number": (lambda t: t.replace('"temperature": 0.0', '"temperature": ' + "9" * 5001),
                    "request_defaults.temperature"),
}


@pytest.fixture()
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    for name, value in ENV.items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "request.json").write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}))
    yield tmp_path


def tree(*roots: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``roots`` with its size and mtime: what a command wrote shows up as a change."""
    seen = {}
    for root in roots:
        for path in [root, *root.rglob("*")]:
            st = os.lstat(path)
            seen[str(path)] = (st.st_size, st.st_mtime_ns)
    return seen


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    result = cli_runner.invoke(*args, env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    return result


def commands(plan: Path, request: Path) -> dict[str, tuple[str, ...]]:
    return {
        "preview": ("preview", "--plan", str(plan), str(request)),
        "send": ("send", "--plan", str(plan), str(request)),
        "trial run": ("trial", "run", str(TASK), "--plan", str(plan), "--user-plan", str(MOCK), "--out", OUT),
        "trial run --user-plan": ("trial", "run", str(TASK), "--plan", str(MOCK), "--user-plan", str(plan),
                                  "--out", OUT),
        "diff": ("diff", str(MOCK), str(plan)),
    }


def assert_refused(work: Path, plan: Path, field: str, problem: str) -> None:
    before = tree(work, TASK.parent)
    located = re.compile(rf"{re.escape(str(plan))}:\d+:\d+: error\[PLAN\]: .*{re.escape(field)}.*{re.escape(problem)}")
    runs = {**commands(plan, work / "request.json"), "gateway check": ("gateway", "check", "--plan", str(plan))}
    for name, args in runs.items():
        env = {"LLM_PROXY_BASE_URL": "http://127.0.0.1:9/v1"} if name == "gateway check" else None
        result = invoke(*args, env=env)
        output = result.output
        assert result.exit_code == 2, (name, output)
        assert located.search(output), (name, output)
        assert "Traceback" not in output and CANARY not in output, (name, output)
        assert "errors.pydantic.dev" not in output and "input_value" not in output, (name, output)
        assert tree(work, TASK.parent) == before, f"{name} wrote something"
        assert not (work / "tmp").exists()


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_resealed_plan_value_is_refused_at_load_by_every_command(work: Path, case: str) -> None:
    edit, field, problem = CASES[case]
    data = golden()
    edit(data)
    plan = work / "mock-echo.json"
    plan.write_bytes(reseal(data))
    assert_refused(work, plan, field, problem)


@pytest.mark.parametrize("case", sorted(TEXT_CASES))
def test_a_resealed_plan_text_is_refused_at_load_by_every_command(work: Path, case: str) -> None:
    edit, says = TEXT_CASES[case]
    text = MOCK.read_text(encoding="utf-8")
    edited = edit(text)
    assert edited != text
    plan = work / "mock-echo.json"
    plan.write_bytes(reseal_text(edited))
    assert_refused(work, plan, "", says)


def test_a_policy_parameter_out_of_bounds_is_refused_before_anything_runs(work: Path) -> None:
    # a policy's parameters are typed by the policy's own model, which the registry supplies: every
    # command that builds the policies refuses them (diff never builds them, and shows the change)
    data = golden()
    data["policies"]["params_policy"]["params"]["reasoning_budget_default"] = 10**12
    plan = work / "mock-echo.json"
    plan.write_bytes(reseal(data))
    before = tree(work, TASK.parent)
    runs = commands(plan, work / "request.json")
    for name in ("preview", "send", "trial run", "trial run --user-plan"):
        result = invoke(*runs[name])
        assert result.exit_code == 2, (name, result.output)
        assert "error[PLAN]" in result.output and "reasoning_budget_default: Input should be less than or equal to " \
            f"{MAX_TOKENS}" in result.output, (name, result.output)
        assert "Traceback" not in result.output
        assert tree(work, TASK.parent) == before, f"{name} wrote something"
    result = invoke(*runs["diff"])
    shown = "policies.params_policy.params.reasoning_budget_default: (absent) → 1000000000000"
    assert result.exit_code == 1 and shown in result.output, result.output


def test_the_untouched_plan_resealed_runs_and_writes_only_inside_out(work: Path) -> None:
    # the control: the harness above refuses only what the edits changed
    plan = work / "mock-echo.json"
    plan.write_bytes(reseal(golden()))
    assert plan.read_bytes() == MOCK.read_bytes()
    runs = commands(plan, work / "request.json")
    for name in ("preview", "send"):
        result = invoke(*runs[name])
        assert result.exit_code == 0, (name, result.output)
    result = invoke(*runs["diff"])  # exit 1: the golden folder's manifest digests are absent here
    assert result.exit_code == 1 and "0 changed, 0 added, 0 removed, 1 unchanged" in result.output, result.output
    result = invoke(*runs["trial run"])
    assert result.exit_code == 0, result.output
    out = (work / OUT).resolve()
    written = [p for p in work.rglob("*") if p.is_file() and p != plan and p.name != "request.json"]
    assert written and all(p.resolve().is_relative_to(out) for p in written)
    assert (out / "trials" / "mock-echo").is_dir()


def test_the_key_has_to_be_safe_but_not_the_file_stem(work: Path) -> None:
    # nothing reads a plan's key from its file name (a trial folder is named by model.key), so a
    # renamed plan file loads; a key that is not a safe name does not, whatever the file is called
    data = golden()
    renamed = work / "agent.json"
    renamed.write_bytes(reseal(data))
    assert load_plan(renamed).model.key == "mock-echo"
    data["model"]["key"] = "../agent"
    unsafe = work / "agent..json"
    unsafe.write_bytes(reseal(data))
    with pytest.raises(Exception, match=r"model\.key: must not contain '\.\.'"):
        load_plan(unsafe)


def test_the_golden_plans_all_load_under_the_value_rules() -> None:
    for path in sorted(GOLDEN.glob("*.json")):
        if path.name == "manifest.json":
            continue
        plan = load_plan(path, check_registry=False)
        assert plan.to_bytes() == path.read_bytes()


@pytest.mark.parametrize(
    ("edit", "where"),
    [
        (_set("policies.params_policy.params.reasoning_budget", math.inf), "policies.params_policy.params"),
        (_set("request_defaults.temperature", math.nan), "request_defaults.temperature"),
        (_set("loop.api_call_timeout_s", math.inf), "loop.api_call_timeout_s"),
    ],
)
def test_the_plan_model_refuses_non_finite_numbers_from_any_loader(edit: Callable[[Body], None], where: str) -> None:
    # Plan.model_validate_json (a Ray worker reading its spec) parses 1e999 and NaN without the
    # strict reader in front, so the model itself refuses them
    data = golden()
    edit(data)
    text = json.dumps(data)  # writes NaN / Infinity, as pydantic's JSON reader accepts them
    with pytest.raises(ValidationError) as caught:
        Plan.model_validate_json(text)
    assert where.split(".")[0] in str(caught.value) and ("finite" in str(caught.value))
