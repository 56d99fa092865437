"""``capplan preview`` and ``capplan send`` (offline: the mock provider and build-time refusals)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli_runner import invoke
from tests.executor.plans import make_plan

REQUEST: dict[str, Any] = {
    "system": "be brief",
    "messages": [{"role": "user", "content": "hi"}],
    "tools": [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}}}],
    "tool_choice": "auto",
}


def _write(tmp_path: Path, plan: Any, request: dict[str, Any] | str = REQUEST) -> tuple[str, str]:
    plan_path, request_path = tmp_path / "plan.json", tmp_path / "request.json"
    plan_path.write_bytes(plan.to_bytes())
    request_path.write_text(request if isinstance(request, str) else json.dumps(request, indent=2), encoding="utf-8")
    return str(plan_path), str(request_path)


def _run(*args: str, env: dict[str, str] | None = None) -> Any:
    return invoke(*args, env=env, catch_exceptions=False)


def test_preview_prints_canonical_kwargs_with_credentials_redacted(tmp_path: Path) -> None:
    plan, request = _write(tmp_path, make_plan("nova", "busan-v1"))
    result = _run("preview", "--plan", plan, request, env={"NOVA_API_KEY": "sk-very-secret"})
    assert result.exit_code == 0, result.output
    assert "sk-very-secret" not in result.output
    kwargs = json.loads(result.stdout)
    assert kwargs["api_key"] == "<redacted>" and kwargs["model"] == "openai/busan-v1"
    assert result.stdout == json.dumps(kwargs, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def test_preview_text_format(tmp_path: Path) -> None:
    plan, request = _write(tmp_path, make_plan())
    # preview runs the credential preflight: litellm's own OPENAI_API_KEY must be set (any value)
    result = _run("preview", "--plan", plan, "--format", "text", request, env={"OPENAI_API_KEY": "sk-dummy-preview"})
    assert result.exit_code == 0
    assert result.stdout.splitlines()[:4] == ["model: openai/gpt-test", "max_retries: 0", "timeout: 120.0", 'tool_choice: "auto"']
    assert "[0] system: be brief" in result.stdout and "tools (1): lookup" in result.stdout


@pytest.mark.parametrize(
    ("plan_kwargs", "request_patch", "env", "expected"),
    [
        ({"provider": "nova", "name": "b"}, {}, {"NOVA_API_KEY": ""}, "request.json: error[CREDENTIAL]: NOVA_API_KEY is not set (or empty)"),
        (
            {"params": {"reasoning_via_thinking_kwarg": True}},
            {"reasoning": {"mode": "adaptive", "effort_hint": "high"}},
            {},
            "request.json: error[REASONING]: reasoning mode 'adaptive' on a thinking-kwarg route",
        ),
        (
            {"rules": {"tool_choice": {"auto": {"action": "reject", "evidence": "2026-01-01, measured"}}}},
            {},
            {},
            "request.json: error[VALUE_RULE]: tool_choice='auto' is rejected on this route",
        ),
        (
            {"policies": {"schema_sanitizer": "strict"}},
            {"tools": [{"type": "function", "function": {"name": "t", "parameters": {"type": "object", "$defs": {"N": {"type": "object", "properties": {"c": {"$ref": "#/$defs/N"}}}}, "properties": {"r": {"$ref": "#/$defs/N"}}}}}], "tool_choice": None},
            {},
            "request.json: error[TOOL_SCHEMA]: tool 't'",
        ),
    ],
)
def test_refusals_are_one_located_line_and_exit_2(
    tmp_path: Path, plan_kwargs: dict, request_patch: dict, env: dict, expected: str
) -> None:
    request = {k: v for k, v in {**REQUEST, **request_patch}.items() if v is not None}
    plan, request_path = _write(tmp_path, make_plan(**plan_kwargs), request)
    for command in ("preview", "send"):
        result = _run(command, "--plan", plan, request_path, env=env)
        assert result.exit_code == 2, result.output
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(str(tmp_path / expected.split(":")[0]) + ":")
        assert expected.split(": ", 1)[1] in lines[0]
        assert "Traceback" not in result.output


def test_a_tampered_plan_is_a_plan_error(tmp_path: Path) -> None:
    plan, request = _write(tmp_path, make_plan())
    Path(plan).write_text(Path(plan).read_text().replace('"test"', '"edited"'), encoding="utf-8")
    result = _run("send", "--plan", plan, request)
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"{plan}: error[PLAN]: fingerprint mismatch")


def test_a_bad_request_file_reports_every_problem_located(tmp_path: Path) -> None:
    text = '{\n  "messages": [\n    {"role": "user", "content": 1}\n  ],\n  "temprature": 0\n}\n'
    plan, request = _write(tmp_path, make_plan(), text)
    result = _run("preview", "--plan", plan, request)
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"{request}:3:22: error[REQUEST]: messages.0.content: Input should be a valid string; or Input should be a valid list",
        f"{request}:5:3: error[REQUEST]: temprature: Extra inputs are not permitted",
    ]


def test_send_on_the_mock_prints_the_parsed_result(tmp_path: Path) -> None:
    plan, request = _write(tmp_path, make_plan("mock", "echo"))
    text = _run("send", "--plan", plan, request)
    assert text.exit_code == 0, text.output
    assert text.stdout.splitlines()[1].startswith('tool_call call_mock_') and 'lookup: {"id": "mmmm"}' in text.stdout
    assert "cost: unknown (unknown)" in text.stdout
    as_json = json.loads(_run("send", "--plan", plan, "--format", "json", request).stdout)
    assert as_json["tool_calls"][0]["arguments"] == {"id": "mmmm"}
    assert as_json["effective_system_prompt"] == "be brief"


def test_a_plan_body_the_model_refuses_is_one_located_line_per_problem(tmp_path: Path) -> None:
    from capplan.core.canonical import canonical_bytes, sha256_hex

    plan, request = _write(tmp_path, make_plan())
    body = json.loads(Path(plan).read_text(encoding="utf-8"))
    body.pop("fingerprint")
    body["loop"]["empty_retry_count"] = -1  # correctly sealed, but not a valid plan body
    body["loop"]["max_context_tokens"] = "many"
    text = canonical_bytes({**body, "fingerprint": sha256_hex(canonical_bytes(body))}).decode()
    Path(plan).write_text(text, encoding="utf-8")
    lines = text.splitlines()
    retry_line = next(i for i, line in enumerate(lines, 1) if '"empty_retry_count"' in line)
    window_line = next(i for i, line in enumerate(lines, 1) if '"max_context_tokens"' in line)
    for command in ("preview", "send"):
        result = _run(command, "--plan", plan, request)
        assert result.exit_code == 2
        # pydantic's multi-line report becomes one located line per problem, in the model's field order
        retries, window = result.stderr.strip().splitlines()
        assert retries.startswith(f"{plan}:{retry_line}:5: error[PLAN]: loop.empty_retry_count: Input should be "
                                  "greater than or equal to 0")
        assert window.startswith(f"{plan}:{window_line}:5: error[PLAN]: loop.max_context_tokens: ")
        assert window.endswith("plan body does not match plan_version 2: recompile it with `capplan compile` "
                               "(see `capplan compile --help`) instead of editing it")
        assert "errors.pydantic.dev" not in result.stderr and "many" not in result.stderr


def test_preview_says_which_history_reasoning_was_left_out_on_stderr(tmp_path: Path) -> None:
    request = {"messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "ok", "reasoning": {"blocks": [{"type": "summary_text", "text": "s"}]}},
        {"role": "user", "content": "more"},
    ]}
    plan, path = _write(tmp_path, make_plan("anthropic", "claude-x", policies={"reasoning_codec": "anthropic"}), request)
    result = _run("preview", "--plan", plan, path, env={"ANTHROPIC_API_KEY": "sk-ant-dummy-preview"})  # the preflight
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["messages"][1] == {"role": "assistant", "content": "ok"}
    assert (f"{path}: note: messages[1].reasoning.blocks[0] (summary_text) not replayed: "
            "a reasoning summary from another model family carries no Anthropic signature") in result.stderr


def test_send_prints_unknown_usage_never_zero_tokens() -> None:
    from capplan.cli.send_cmd import render_result

    base: dict[str, Any] = {"text": "hi", "tool_calls": [], "reasoning": None, "cost_usd": None, "cost_source": "unknown",
            "finish_reason": "stop", "latency_s": 0.1, "openrouter_generation_id": None, "parser_errors": [],
            "validation_errors": [], "value_substitutions": []}
    zeros = {"prompt_tokens": 0, "completion_tokens": 0, "reasoning_tokens": 0, "provider_raw": {}}
    text = render_result({**base, "usage": zeros})
    assert "usage: unknown (the provider reported no token counts)" in text and "prompt_tokens=0" not in text
    assert "cost: unknown (unknown)" in text
    counted = render_result({**base, "usage": {**zeros, "prompt_tokens": 9, "completion_tokens": 1}})
    assert "usage: completion_tokens=1, prompt_tokens=9, reasoning_tokens=0" in counted
