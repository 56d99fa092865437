"""Property-based fuzzing of what CI feeds capplan: overlays, plans and request files.

For every generated input: the exit code is 0, 1 or 2, there is no traceback, every error line
is located (``file[:line:col]: error[CODE]``), nothing is written when compile fails, and a
planted credential canary (in the environment, and pasted into ``*_env`` fields) never appears
in any output. Derandomised and bounded, so the whole module runs in well under a minute.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.cli_runner import invoke  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
PLAN = REPO / "golden" / "plans" / "gpt-4o.json"
CANARY = "sk-canary-9f3b2d7c1e0a4b6d8f2a"
ENV = {"OPENAI_API_KEY": CANARY, "OPENROUTER_API_KEY": CANARY, "ANTHROPIC_API_KEY": CANARY}

# located: "file:line:col: error[CODE]" (inputs), "file: error[CODE]" (a plan or request named whole)
LOCATED = re.compile(r"^\S.*?(:\d+:\d+)?: (error|warning|note)\[[\w-]+\]")
ALLOWED = re.compile(r"^(    hint: |capplan: \d+ error\(s\); nothing was written$|capplan lint: \d+ file\(s\) checked|compiled |wrote )")

FUZZ = settings(max_examples=30, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12), st.sampled_from([CANARY, "", " ", "*", "nova", "strict", "reject", "auto", "ultra",
                                            "javascript:alert(1)", "data:image/png;base64,@@", "\ud800"]),
)
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)), max_leaves=12)

SLOTS = ["schema_sanitizer", "prompt_policy", "content_policy", "params_policy", "response_policy",
         "reasoning_codec", "cache_policy", "message_assembly_policy", "assistant_text_policy"]
BLOCK_KEYS = SLOTS + ["params", "max_context_tokens", "context_watermark", "empty_retry_count", "match",
                      "match_provider", "openrouter_defaults", "default_max_turns"]
PARAM_KEYS = ["fixed_temperature", "supports_seed", "reasoning_budget_default", "param_value_rules",
              "reasoning_via_thinking_kwarg", "drop_sampling_when_thinking"]


def known_or(keys: list[str]) -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(keys), st.text(max_size=10))


blocks = st.dictionaries(known_or(BLOCK_KEYS), st.one_of(
    values, st.sampled_from(["nova", "strict", "gemini_recursive", "generation_params"]),
    st.fixed_dictionaries({"name": st.sampled_from(["nova", "generation_params", "strict"]),
                           "params": st.dictionaries(known_or(PARAM_KEYS + ["empty_assistant_filler"]), values,
                                                     max_size=3)}),
    st.dictionaries(known_or(PARAM_KEYS), values, max_size=3)), max_size=5)
bindings = st.dictionaries(known_or(["api_key_env", "api_base_env", "endpoint", "api_keys_env"]),
                           st.one_of(values, st.just(CANARY)), max_size=3)
overlays = st.fixed_dictionaries({}, optional={
    "presets": st.dictionaries(st.text(min_size=1, max_size=6), blocks, max_size=2),
    "providers": st.dictionaries(st.sampled_from(["openai", "openrouter", "acme"]), blocks, max_size=2),
    "bindings": st.dictionaries(st.sampled_from(["openai", "acme"]), bindings, max_size=2),
    "litellm_models": st.dictionaries(st.text(max_size=10), values, max_size=2),
})


def overlay_text(data: dict[str, Any], cut: int, noise: str) -> str:
    text = json.dumps(data, ensure_ascii=False)  # JSON is YAML; the cut and noise make it sometimes not
    return text[: len(text) - cut] + noise if cut or noise else text


def run(*args: str) -> Result:
    return invoke(*args, env=ENV)


def check(result: Result) -> None:
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    assert result.exit_code in (0, 1, 2), result.output
    assert "Traceback" not in result.output
    assert CANARY not in result.output
    if result.exit_code == 2:
        for line in result.output.splitlines():
            assert LOCATED.match(line) or ALLOWED.match(line) or not line.strip(), line


@FUZZ
@given(data=overlays, cut=st.integers(0, 3), noise=st.sampled_from(["", "\n  - &a [*a]", "\t", ": :", "]"]))
def test_overlays(tmp_path_factory: pytest.TempPathFactory, data: dict[str, Any], cut: int, noise: str) -> None:
    folder = tmp_path_factory.mktemp("overlay")
    overlay = folder / "overlay.yaml"
    overlay.write_text(overlay_text(data, cut, noise), encoding="utf-8", errors="surrogatepass")
    check(run("lint", str(overlay)))
    out = folder / "plans"
    result = run("compile", "--presets-file", str(overlay), "--model", "gpt-4o", "--out", str(out))
    check(result)
    if result.exit_code == 2:
        assert not out.exists(), "compile wrote plans although an input had an error"
    else:
        assert CANARY not in "".join(p.read_text() for p in out.glob("*.json"))


def mutate_plan(data: dict[str, Any], path: list[str], value: Any, mode: int) -> str:
    node: Any = data
    for key in path[:-1]:
        node = node.setdefault(key, {}) if isinstance(node, dict) else node
    if isinstance(node, dict):
        if mode == 0:
            node[path[-1]] = value
        elif mode == 1:
            node.pop(path[-1], None)
    text = json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    return text if mode != 2 else text.replace('"fingerprint"', '"fingerprint": "0",\n  "fingerprint"', 1)


PLAN_PATHS = [["plan_version"], ["fingerprint"], ["policies", "params_policy", "params", "supports_seed"],
              ["policies", "schema_sanitizer", "name"], ["loop", "context_watermark"], ["binding", "binding", "api_key_env"],
              ["model", "wire_model"], ["request_defaults", "temperature"], ["param_value_rules"]]


@FUZZ
@given(path=st.sampled_from(PLAN_PATHS), value=values, mode=st.integers(0, 2))
def test_plans(tmp_path_factory: pytest.TempPathFactory, path: list[str], value: Any, mode: int) -> None:
    folder = tmp_path_factory.mktemp("plan")
    plan = folder / "plan.json"
    plan.write_text(mutate_plan(json.loads(PLAN.read_text()), path, value, mode), encoding="utf-8",
                    errors="surrogatepass")
    request = folder / "request.json"
    request.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}))
    check(run("preview", "--plan", str(plan), str(request)))


tool_calls = st.lists(st.fixed_dictionaries({
    "id": st.sampled_from(["c1", "c2", ""]),
    "function": st.fixed_dictionaries({"name": st.sampled_from(["lookup", "nope"]),
                                       "arguments": st.one_of(st.just("{}"), st.text(max_size=6), values)})}),
    max_size=3)
messages = st.lists(st.one_of(
    st.fixed_dictionaries({"role": st.just("user"), "content": st.one_of(st.text(max_size=8), st.lists(
        st.fixed_dictionaries({"type": st.sampled_from(["text", "image_url", "audio"]), "text": st.text(max_size=4),
                               "image_url": st.fixed_dictionaries({"url": st.sampled_from(
                                   ["https://x.test/a.png", "javascript:alert(1)", "data:image/png;base64,iVBORw0KGgo=",
                                    "data:image/png;base64,@@", "file:///etc/passwd"])})}), max_size=2))}),
    st.fixed_dictionaries({"role": st.just("assistant"), "content": st.one_of(st.none(), st.text(max_size=5)),
                           "tool_calls": tool_calls}),
    st.fixed_dictionaries({"role": st.just("tool"), "tool_call_id": st.sampled_from(["c1", "c2", "c9"]),
                           "content": st.text(max_size=5)}),
    values), min_size=0, max_size=5)
requests = st.fixed_dictionaries({"messages": messages}, optional={
    "tools": st.just([{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]),
    "temperature": st.one_of(st.floats(allow_nan=False, allow_infinity=False), values),
    "top_p": values, "tool_choice": values, "max_tokens": values, "seed": values,
})


@FUZZ
@given(request=requests, raw=st.sampled_from(["", "Infinity", "NaN", '"\\ud800"', "[" * 200]))
def test_request_files(tmp_path_factory: pytest.TempPathFactory, request: dict[str, Any], raw: str) -> None:
    folder = tmp_path_factory.mktemp("request")
    path = folder / "request.json"
    text = json.dumps(request, ensure_ascii=True, allow_nan=True)
    if raw:
        text = text.replace('"messages": ', f'"x": {raw}, "messages": ', 1)
    path.write_text(text)
    check(run("preview", "--plan", str(PLAN), str(path)))
